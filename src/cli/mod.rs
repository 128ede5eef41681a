//! Command-line front end (native only): `trace`, `render`, `similarity`, `convert-f16`.

use std::io::{BufWriter, ErrorKind, Write};
use std::path::PathBuf;
use std::process::ExitCode;

mod train;

use clap::{Parser, Subcommand};
use serde::Serialize;

use crate::analysis::generation::{generate, SamplingSettings};
use crate::analysis::pooling::{cosine, mean_pool};
use crate::checkpoints::{load_named, read_file, WeightPrecision};
use crate::error::{Result, VizError};
use crate::explain::DescribedTrace;
use crate::trace::{Readback, Trace};
use crate::transformer::{Keep, PassRequest};
use crate::Transformer;

#[derive(Parser)]
#[command(
    name = "transformer-viz",
    version,
    about = "Watch a real transformer compute on a sentence."
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(clap::Args)]
struct ModelArgs {
    /// Model name (the catalog's: src/checkpoints/models.json).
    #[arg(
        long,
        default_value = crate::checkpoints::catalog::default_model().name.as_str(),
        value_parser = clap::builder::PossibleValuesParser::new(crate::checkpoints::catalog::names().iter().copied())
    )]
    model: String,
    /// Where the setup step put the model files.
    #[arg(long, default_value = "models")]
    models_dir: PathBuf,
    /// Use the f16 weights the browser loads instead of the original f32 ones.
    #[arg(long)]
    f16: bool,
    /// A model in the project's own format from this folder (config.json, tokenizer.json,
    /// model.safetensors: what `train`, `train-page` and the page's Training section export),
    /// instead of `--model`.
    #[arg(long)]
    dir: Option<PathBuf>,
}

impl ModelArgs {
    fn load(&self) -> Result<Transformer> {
        if let Some(dir) = &self.dir {
            return crate::checkpoints::load_dir(dir);
        }
        let precision = if self.f16 {
            WeightPrecision::F16
        } else {
            WeightPrecision::F32
        };
        load_named(&self.models_dir, &self.model, precision)
    }
}

#[derive(Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum BackendChoice {
    Cpu,
    Gpu,
}

#[derive(Subcommand)]
enum Command {
    /// Print the trace of one forward pass as JSON: tokens and every head's attention weights
    /// per layer (`--full` adds every step of the pass).
    Trace {
        #[command(flatten)]
        model: ModelArgs,
        #[arg(long)]
        text: String,
        /// Print the whole trace: every step with its equation, shape and values.
        #[arg(long)]
        full: bool,
        /// Where the pass runs: `cpu`, or `gpu` (the first adapter wgpu finds; natively
        /// Vulkan, Metal or DX12). The adapter is named on stderr.
        #[arg(long, value_enum, default_value_t = BackendChoice::Cpu)]
        backend: BackendChoice,
    },
    /// Draw every view as SVG and PNG into a directory.
    Render {
        #[command(flatten)]
        model: ModelArgs,
        #[arg(long)]
        text: String,
        #[arg(long)]
        out: PathBuf,
        /// Only these layers' head heatmaps (default: all).
        #[arg(long)]
        layer: Option<usize>,
    },
    /// The most likely next tokens after the text, as JSON (a model with a language-model head).
    Predict {
        #[command(flatten)]
        model: ModelArgs,
        #[arg(long)]
        text: String,
        /// How many of the most likely tokens to print.
        #[arg(long, default_value_t = 5)]
        top: usize,
    },
    /// The most likely next tokens with parts of the model switched off (heads, feed-forward
    /// layers), beside the intact model's, as JSON.
    Ablate {
        #[command(flatten)]
        model: ModelArgs,
        #[arg(long)]
        text: String,
        /// Heads to switch off, as layer:head (from 0), comma-separated: 1:3,2:0.
        #[arg(long, value_delimiter = ',')]
        head: Vec<String>,
        /// Feed-forward layers to switch off (from 0), comma-separated.
        #[arg(long, value_delimiter = ',')]
        ffn: Vec<usize>,
        /// Replace each part's output by its mean over the text instead of zeros.
        #[arg(long)]
        mean: bool,
        /// Leave out the positional encoding.
        #[arg(long)]
        no_position: bool,
        /// Lift the causal mask (every token sees the later ones; never trained so).
        #[arg(long)]
        no_mask: bool,
        /// How many of the most likely tokens to print.
        #[arg(long, default_value_t = 5)]
        top: usize,
    },
    /// Activation patching: each head's output, and the stream at each layer and token, of
    /// TEXT put into the run on CORRUPT (as many tokens); prints how much of the logit
    /// difference between the two answers each patch moves back, as JSON.
    Patch {
        #[command(flatten)]
        model: ModelArgs,
        #[arg(long)]
        text: String,
        #[arg(long)]
        corrupt: String,
        /// The answer the text leads to (one token, with its leading space: " Mary");
        /// default: the text's most likely next token.
        #[arg(long)]
        answer: Option<String>,
        /// The answer the corrupt text leads to; default: its most likely next token.
        #[arg(long)]
        wrong: Option<String>,
    },
    /// Continues the text by up to N tokens (a causal model), greedy or sampled, through the
    /// KV cache; prints JSON: the prompt's tokens, each generated token with the probability
    /// it was drawn with, the new text and the speed.
    Generate {
        #[command(flatten)]
        model: ModelArgs,
        #[arg(long)]
        text: String,
        /// How many tokens to add (fewer if the model ends the text or the context is full).
        #[arg(long, default_value_t = 20)]
        tokens: usize,
        /// 0 is greedy (the default): always the most likely token.
        #[arg(long, default_value_t = 0.0)]
        temperature: f32,
        /// Keep the k most likely tokens (0: all).
        #[arg(long, default_value_t = 0)]
        top_k: usize,
        /// Keep the most likely tokens until their probabilities reach p (1: all).
        #[arg(long, default_value_t = 1.0)]
        top_p: f32,
        /// The random stream's seed: the same seed and settings give the same text.
        #[arg(long, default_value_t = 0)]
        seed: u64,
    },
    /// Cosine similarity of mean-pooled sentence embeddings, for each pair of texts.
    Similarity {
        #[command(flatten)]
        model: ModelArgs,
        #[arg(long, num_args = 2.., required = true)]
        text: Vec<String>,
    },
    /// Convert a safetensors file's floating-point tensors to f16.
    ConvertF16 { input: PathBuf, output: PathBuf },
    /// Print stories of the lecture models' story generator, one a line (seeded).
    Stories(train::StoriesArgs),
    /// Train a model as the page's Training section does (a preset or settings as JSON), with
    /// the same steps: a line every 50 steps, the model's files into `--out`; or, with
    /// `--gradients`, print the first batch's loss and gradients as JSON (the page's must agree).
    TrainPage(train::TrainPageArgs),
    /// What a lecture model's heads do, on held-out text: previous-token and induction heads,
    /// copying, pronouns' antecedents, indirect objects, and five continuations.
    Behaviours {
        #[command(flatten)]
        model: ModelArgs,
        /// The held-out text's folder (for the previous-token sentences).
        #[arg(long, default_value = "models/corpus")]
        corpus: PathBuf,
        /// Held-out pronoun sentences and indirect-object prompts measured.
        #[arg(long, default_value_t = 200)]
        count: usize,
        /// Their seed: 7, the training log's (`HELD_OUT_SEED`); the tests grade on 2026's.
        #[arg(long, default_value_t = crate::train::behaviour::HELD_OUT_SEED)]
        seed: u64,
    },
    /// Learn a byte-level BPE vocabulary from a folder of text (for `train`).
    Vocab(train::VocabArgs),
    /// Train one of the lecture's models on a folder of text (both cores, seeded).
    Train(train::TrainArgs),
    /// Train the lecture's encoder-decoder to write its source backwards (seeded, one core).
    TrainReverse(train::ReverseArgs),
    /// Write a source through an encoder-decoder (greedy), with each step's choice.
    Translate {
        #[command(flatten)]
        model: ModelArgs,
        #[arg(long)]
        text: String,
    },
}

#[derive(Serialize)]
struct LayerSummary {
    /// (heads, T, T) softmax weights; rows are queries.
    attention: Vec<Vec<Vec<f32>>>,
}

#[derive(Serialize)]
struct TraceSummary<'a> {
    model: &'a str,
    tokens: Vec<&'a str>,
    token_ids: Vec<u32>,
    truncated: &'a Option<crate::trace::Truncation>,
    layers: Vec<LayerSummary>,
}

fn summary(trace: &Trace) -> Result<TraceSummary<'_>> {
    let mut layers = Vec::new();
    for layer in 0..trace.config.n_layers {
        let a = trace.attention_layer(layer)?; // (heads, T, T)
        let attention = a
            .outer_iter()
            .map(|h| h.rows().into_iter().map(|r| r.to_vec()).collect())
            .collect();
        layers.push(LayerSummary { attention });
    }
    Ok(TraceSummary {
        model: &trace.model,
        tokens: trace.tokens.iter().map(|t| t.text.as_str()).collect(),
        token_ids: trace.tokens.iter().map(|t| t.id).collect(),
        truncated: &trace.truncated,
        layers,
    })
}

/// Writes a command's result to stdout. A reader that closes the pipe early (`| head -c 100`)
/// has all it wants: that ends the command normally, with no message and exit status 0.
fn print_stdout(write: impl FnOnce(&mut dyn Write) -> std::io::Result<()>) -> Result<()> {
    let mut out = BufWriter::new(std::io::stdout().lock()); // one write a buffer, not one a token of JSON
    match write(&mut out).and_then(|()| out.flush()) {
        Err(e) if e.kind() != ErrorKind::BrokenPipe => Err(VizError::Io {
            path: "stdout".into(),
            reason: e.to_string(),
        }),
        _ => Ok(()),
    }
}

fn print_json<T: Serialize>(value: &T) -> Result<()> {
    // serde_json's error converts back to the io::Error it wraps, keeping its kind (BrokenPipe).
    print_stdout(|out| {
        serde_json::to_writer(&mut *out, value)?;
        writeln!(out)
    })
}

fn run(cli: Cli) -> Result<()> {
    match cli.command {
        Command::Trace {
            model,
            text,
            full,
            backend,
        } => {
            let m = model.load()?;
            let trace = match backend {
                BackendChoice::Cpu => m.trace(&text)?,
                BackendChoice::Gpu => {
                    let gpu = crate::gpu::GpuBackend::new(
                        pollster::block_on(crate::gpu::GpuContext::new())?,
                        &m.weights,
                    );
                    let request =
                        PassRequest::text(&text).keeping(Keep::Steps(Readback::Everything));
                    let trace = pollster::block_on(m.pass(&gpu, request))?.into_trace();
                    match gpu.failure() {
                        None => {
                            eprintln!("ran on the GPU: {}", gpu.context().adapter_description())
                        }
                        Some(e) => eprintln!(
                            "note: the GPU failed ({e}); the rest of the pass ran on the CPU"
                        ),
                    }
                    trace
                }
            };
            if let Some(t) = &trace.truncated {
                eprintln!(
                    "note: the text has {} tokens; only the first {} fit the model's context",
                    t.original_tokens, t.kept_tokens
                );
            }
            if full {
                print_json(&DescribedTrace::new(&trace))
            } else {
                print_json(&summary(&trace)?)
            }
        }
        Command::Render {
            model,
            text,
            out,
            layer,
        } => {
            let m = model.load()?;
            let trace = m.trace(&text)?;
            let written = crate::draw::files::render_all(&m, &trace, &out, layer)?;
            eprintln!("wrote {} files to {}", written, out.display());
            Ok(())
        }
        Command::Predict { model, text, top } => {
            let m = model.load()?;
            let trace = m.trace(&text)?;
            print_json(&crate::analysis::prediction::prediction(&m, &trace, top)?)
        }
        Command::Ablate {
            model,
            text,
            head,
            ffn,
            mean,
            no_position,
            no_mask,
            top,
        } => {
            use crate::analysis::ablation::{ablated_prediction, parse_head, Fill, Part, Switch};
            let m = model.load()?;
            let fill = if mean { Fill::Mean } else { Fill::Zero };
            let mut parts = head
                .iter()
                .map(|h| parse_head(h))
                .collect::<Result<Vec<Part>>>()?;
            parts.extend(ffn.iter().map(|&layer| Part::Ffn { layer }));
            parts.extend(no_position.then_some(Part::Position));
            parts.extend(no_mask.then_some(Part::Mask));
            let switches: Vec<Switch> = parts
                .into_iter()
                .map(|part| Switch { part, fill })
                .collect();
            print_json(&ablated_prediction(&m, &text, &switches, top)?)
        }
        Command::Patch {
            model,
            text,
            corrupt,
            answer,
            wrong,
        } => {
            let m = model.load()?;
            print_json(&crate::analysis::patching::patch(
                &m,
                &text,
                &corrupt,
                answer.as_deref(),
                wrong.as_deref(),
            )?)
        }
        Command::Generate {
            model,
            text,
            tokens,
            temperature,
            top_k,
            top_p,
            seed,
        } => {
            let m = model.load()?;
            let settings = SamplingSettings {
                temperature,
                top_k,
                top_p,
                seed,
            };
            print_json(&generate(&m, &text, tokens, &settings)?)
        }
        Command::Similarity { model, text } => {
            let m = model.load()?;
            let pooled: Vec<_> = text
                .iter()
                .map(|t| {
                    m.run_ids(&m.encode(t)?.ids())
                        .map(|o| mean_pool(o.hidden.view()))
                })
                .collect::<Result<_>>()?;
            print_stdout(|out| {
                for i in 0..text.len() {
                    for j in i + 1..text.len() {
                        writeln!(
                            out,
                            "{:.4}\t{}\t{}",
                            cosine(&pooled[i], &pooled[j]),
                            text[i],
                            text[j]
                        )?;
                    }
                }
                Ok(())
            })
        }
        Command::Stories(args) => train::print_stories(args),
        Command::TrainPage(args) => train::train_page(args),
        Command::Behaviours {
            model,
            corpus,
            count,
            seed,
        } => train::behaviours(&model.load()?, &corpus, count, seed),
        Command::Vocab(args) => train::vocab(args),
        Command::Train(args) => train::train(args),
        Command::TrainReverse(args) => train::train_reverse(args),
        Command::Translate { model, text } => {
            let model = model.load()?;
            let t = model.translate(&text)?;
            for (i, step) in t.steps.iter().enumerate() {
                let runner = step
                    .runner_up
                    .as_ref()
                    .map(|(tok, p)| format!(", then {:?} {:.3}", tok.text, p))
                    .unwrap_or_default();
                println!(
                    "step {}: {:?} {:.3}{runner}",
                    i + 1,
                    step.token.text,
                    step.probability
                );
            }
            println!(
                "{}{}",
                t.output,
                if t.finished {
                    ""
                } else {
                    " (the context filled before the end token)"
                }
            );
            Ok(())
        }
        Command::ConvertF16 { input, output } => {
            let halves = crate::formats::safetensors::convert_to_f16(&read_file(&input)?)?;
            let tmp = output.with_extension("part");
            std::fs::write(&tmp, &halves)
                .and_then(|_| std::fs::rename(&tmp, &output))
                .map_err(|e| VizError::Io {
                    path: output.display().to_string(),
                    reason: e.to_string(),
                })?;
            eprintln!(
                "wrote {} ({:.1} MB)",
                output.display(),
                halves.len() as f64 / 1e6
            );
            Ok(())
        }
    }
}

pub fn main() -> ExitCode {
    match run(Cli::parse()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}
