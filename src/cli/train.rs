//! `transformer-viz vocab` and `transformer-viz train`: the trainer's command line.

use std::path::PathBuf;

use crate::analysis::generation::{generate, SamplingSettings};
use crate::checkpoints::lecture;
use crate::error::{Result, VizError};
use crate::tokenize::vocab_file::VocabFile;
use crate::tokenize::Tokenizer;
use crate::train::batches::Mixture;
use crate::train::behaviour::{ioi_report, of_kind, pronoun_heads, PRONOUN_KINDS};
use crate::train::bigram::bigram_loss;
use crate::train::corpus::{drill_text, token_stream, Corpus};
use crate::train::head_probe::HeadProbe;
use crate::train::in_page::{corpus_files, PageRun, PageSettings, Task};
use crate::train::run::Run;
use crate::train::step::Settings;
use crate::train::stories::{
    drill_stories, ioi_prompts, pronoun_cases, role_stories, stories, DrillExtras, Split,
};
use crate::train::vocab::learn_vocab;
use crate::train::vocab_report::{text_tokens, tokens_per_word, vocab_report};

#[derive(clap::Args)]
pub struct VocabArgs {
    /// A folder of .txt files (`scripts/fetch-corpus.sh` fills `models/corpus/`).
    #[arg(long, default_value = "models/corpus")]
    pub corpus: PathBuf,
    /// Tokens in all: the 256 bytes, the merges and the start token.
    #[arg(long, default_value_t = 2048)]
    pub size: usize,
    /// Generated stories added to the text (`transformer-viz stories`; give `train` the same).
    #[arg(long, default_value_t = 0)]
    pub stories: usize,
    /// A sentence whose tokens per word the report gives.
    #[arg(
        long,
        default_value = "When Mary and John went to the store, John gave a drink to Mary."
    )]
    pub sentence: String,
    #[arg(long)]
    pub out: PathBuf,
}

#[derive(clap::Args)]
pub struct StoriesArgs {
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    #[arg(long, default_value_t = 10)]
    pub count: usize,
    /// The held-out names and templates (what evaluation uses) instead of the training ones.
    #[arg(long)]
    pub held_out: bool,
    /// Role stories (`train --role-stories`, the training side) instead.
    #[arg(long, conflicts_with = "held_out")]
    pub roles: bool,
    /// Drill stories (`train --drill-stories`, the training side) instead.
    #[arg(long, conflicts_with_all = ["held_out", "roles"])]
    pub drills: bool,
    /// With `--drills`: pronoun drills with things too (`train --drill-things`).
    #[arg(long, requires = "drills")]
    pub drill_things: bool,
    /// With `--drills`: ten verbs before "him" / "her" (`train --drill-verbs`).
    #[arg(long, requires = "drills")]
    pub drill_verbs: bool,
    /// With `--drills`: one pronoun-drill episode in three a person alone (`train --drill-solo`).
    #[arg(long, requires = "drills")]
    pub drill_solo: bool,
    /// With `--drills`: "it" after a verb of watching (`train --drill-watched-things`).
    #[arg(long, requires = "drills")]
    pub drill_watched_things: bool,
    /// With `--drills`: indirect-object stories only (`train --drill-ioi-only`).
    #[arg(long, requires = "drills")]
    pub drill_ioi_only: bool,
    /// With `--drills`: pairs' doings without a place too (`train --drill-placeless`).
    #[arg(long, requires = "drills")]
    pub drill_placeless: bool,
}

#[derive(clap::Args)]
pub struct TrainPageArgs {
    /// A preset of the page: previous-token, induction or stories.
    #[arg(long, conflicts_with = "settings")]
    pub preset: Option<String>,
    /// The settings as the page's link holds them (JSON: layers, heads, d_model, context,
    /// pre_ln, positions, task, seed, learning_rate, batch, steps).
    #[arg(long)]
    pub settings: Option<String>,
    /// Stop after this many steps (default: the settings' own).
    #[arg(long)]
    pub steps: Option<usize>,
    /// Print the first batch's loss and every gradient as JSON instead of training.
    #[arg(long)]
    pub gradients: bool,
    /// Cut each step's batch into this many parts computed side by side on the CPU's threads,
    /// as the page's threaded trainer cuts it into one part a thread (1: the whole batch).
    #[arg(long, default_value_t = 1)]
    pub threads: usize,
    /// Write the trained model's config.json, tokenizer.json and model.safetensors here.
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// The corpus folder whose Moby-Dick chapters the text task reads (the page serves the
    /// same files).
    #[arg(long, default_value = "models/corpus")]
    pub corpus: PathBuf,
}

#[derive(clap::Args)]
pub struct TrainArgs {
    /// Which lecture model: lecture-post-ln or lecture-pre-ln.
    #[arg(long)]
    pub model: String,
    #[arg(long, default_value = "models/corpus")]
    pub corpus: PathBuf,
    /// The vocabulary learned by `transformer-viz vocab`.
    #[arg(long)]
    pub vocab: PathBuf,
    /// Where to write config.json, tokenizer.json, model.safetensors, train.log and loss.svg.
    #[arg(long)]
    pub out: PathBuf,
    #[arg(long, default_value_t = 4000)]
    pub steps: usize,
    #[arg(long, default_value_t = 32)]
    pub batch: usize,
    #[arg(long, default_value_t = 128)]
    pub sequence: usize,
    #[arg(long, default_value_t = 2e-3)]
    pub learning_rate: f64,
    #[arg(long, default_value_t = 400)]
    pub warmup: usize,
    #[arg(long, default_value_t = 0.1)]
    pub weight_decay: f64,
    #[arg(long, default_value_t = 1.0)]
    pub clip: f64,
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    #[arg(long, default_value_t = 100)]
    pub eval_every: usize,
    #[arg(long, default_value_t = 500)]
    pub checkpoint_every: usize,
    /// Generated stories added to the training text (`transformer-viz stories`): names
    /// referred to again, indirect objects, repeated lists, agreement. The held-out text
    /// stays real text.
    #[arg(long, default_value_t = 0)]
    pub stories: usize,
    /// Role stories added to the training text (`stories::role_stories`): each pronoun
    /// followed by its antecedent's own deed, and more indirect objects. A second phase's text.
    #[arg(long, default_value_t = 0)]
    pub role_stories: usize,
    /// Drill stories (`stories::drill_stories`: role stories and indirect-object sentences of
    /// many shapes) that make the drill text, a stream apart from the training text that
    /// `--drills` draws windows from.
    #[arg(long, default_value_t = 0)]
    pub drill_stories: usize,
    /// Windows of the drill text, in thousandths of a batch (after the curriculum's first
    /// part): the pronoun and indirect-object answers are a few tokens in a thousand of the
    /// text, too few for their gradient to be felt.
    #[arg(long, default_value_t = 0)]
    pub drills: u32,
    /// Of the drill windows, how many in a thousand begin at a drill story's start, right
    /// after the start token (where the held-out prompts and a student's sentence are).
    #[arg(long, default_value_t = 0)]
    pub drill_starts: u32,
    /// Pronoun drills with things too: one episode in three is one person and three things,
    /// "it" the one said in the singular (off in both committed decoders).
    #[arg(long)]
    pub drill_things: bool,
    /// A quarter of the indirect-object drills open with a word of the corpus, capitalised,
    /// right before the pair, where a student's typed sentence starts (on in the committed
    /// pre-LN decoder's second phase).
    #[arg(long)]
    pub drill_word_first: bool,
    /// A pronoun drill's "him" / "her" comes after one of ten verbs, not only "watched" and
    /// "saw" (on in the committed pre-LN decoder's second phase).
    #[arg(long)]
    pub drill_verbs: bool,
    /// One pronoun-drill episode in three is one person alone, then "he" / "she" and their
    /// deed (on in the committed pre-LN decoder's second phase).
    #[arg(long)]
    pub drill_solo: bool,
    /// One pronoun-drill episode in four is a person and a thing, then "it" after a verb of
    /// watching and the thing's deed (off in both committed decoders).
    #[arg(long)]
    pub drill_watched_things: bool,
    /// Every drill story is indirect-object sentences, no pronoun drill (the post-LN decoder's
    /// third phase).
    #[arg(long)]
    pub drill_ioi_only: bool,
    /// An indirect-object drill's pair may also do something with no place said ("went home",
    /// "ate lunch"), not only at a place (the post-LN decoder's third phase).
    #[arg(long)]
    pub drill_placeless: bool,
    /// Half the indirect-object drills whose opening ends a sentence go on with a sentence of
    /// the corpus before the action (the post-LN decoder's third phase).
    #[arg(long)]
    pub drill_corpus_asides: bool,
    /// Measure pronouns' antecedents and indirect objects on this many held-out sentences at
    /// each evaluation, in the log (`transformer-viz behaviours`; 0: not measured).
    #[arg(long, default_value_t = 0)]
    pub behaviours: usize,
    /// Sequences that repeat a random run of tokens until full, in thousandths of a batch
    /// (the induction heads' lesson; 0 for plain text only).
    #[arg(long, default_value_t = 100)]
    pub random_repeat: u32,
    /// Windows of text with a span copied later into them, in thousandths of a batch.
    #[arg(long, default_value_t = 150)]
    pub copied_span: u32,
    /// Random runs draw from this many of the training text's most frequent tokens (0: from
    /// the whole vocabulary).
    #[arg(long, default_value_t = 0)]
    pub run_pool: u32,
    /// A random run's length, shortest and longest ("8-48").
    #[arg(long, default_value = "8-48", value_parser = parse_range)]
    pub run_lengths: (u32, u32),
    #[arg(long, default_value = "8-48", value_parser = parse_range)]
    pub early_run_lengths: (u32, u32),
    /// Random runs draw the token of frequency rank r (from 0) with a chance of about
    /// 1 / (r + 1.5)^Z (0: alike), from the pool or, with a pool of 0, from every token.
    #[arg(long, default_value_t = 0.0)]
    pub run_zipf: f32,
    #[arg(long, default_value_t = 0.0)]
    pub early_run_zipf: f32,
    /// AdamW's second-moment decay.
    #[arg(long, default_value_t = 0.95)]
    pub beta2: f64,
    /// The projections' standard deviation at initialisation (0.088 = 1/sqrt(128) is
    /// Xavier's for the lecture width).
    #[arg(long, default_value_t = 0.02)]
    pub projection_std: f32,
    /// An unembedding of its own instead of the embedding transposed.
    #[arg(long)]
    pub untied: bool,
    /// A curriculum: the first N steps draw from the --early-* mixture (0: none).
    #[arg(long, default_value_t = 0)]
    pub early_steps: usize,
    #[arg(long, default_value_t = 600)]
    pub early_random_repeat: u32,
    #[arg(long, default_value_t = 100)]
    pub early_copied_span: u32,
    #[arg(long, default_value_t = 256)]
    pub early_run_pool: u32,
    /// The early runs' pool doubles every N steps until it holds every token (0: it stays).
    #[arg(long, default_value_t = 0)]
    pub early_pool_doubling: usize,
    /// Continue from the checkpoint in --out (same settings).
    #[arg(long)]
    pub resume: bool,
    /// Start from another run's weights (its model.safetensors, the same model) instead of
    /// the seeded initial ones: a second phase of training with other settings.
    #[arg(long, value_name = "FILE")]
    pub init_from: Option<PathBuf>,
}

#[derive(clap::Args)]
pub struct ReverseArgs {
    /// Where to write config.json, tokenizer.json, model.safetensors, train.log and loss.svg.
    #[arg(long)]
    pub out: PathBuf,
    #[arg(long, default_value_t = 12000)]
    pub steps: usize,
    #[arg(long, default_value_t = 64)]
    pub batch: usize,
    #[arg(long, default_value_t = 5e-4)]
    pub learning_rate: f64,
    #[arg(long, default_value_t = 500)]
    pub warmup: usize,
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    #[arg(long, default_value_t = 250)]
    pub eval_every: usize,
    /// Held-out strings measured at each evaluation.
    #[arg(long, default_value_t = 1000)]
    pub eval_strings: usize,
    /// LayerNorm after each residual addition, as the paper, instead of before each sublayer
    /// (with a final norm per stack) as the committed model.
    #[arg(long)]
    pub post_ln: bool,
}

pub fn train_reverse(args: ReverseArgs) -> Result<()> {
    let settings = Settings {
        steps: args.steps,
        batch: args.batch,
        sequence: crate::train::reversal::MAX_LETTERS + 1,
        learning_rate: args.learning_rate,
        warmup_steps: args.warmup,
        final_rate_share: 0.1,
        weight_decay: 0.01,
        clip_norm: 1.0,
        seed: args.seed,
        eval_every: args.eval_every,
        checkpoint_every: args.steps,
        beta2: 0.95,
        mixture: Mixture::PLAIN,
        early: None,
        pool_doubling: 0,
        projection_std: 0.02,
        shards: 1,
    };
    let outcome = crate::train::reversal_run::ReversalRun {
        settings,
        out: args.out.clone(),
        eval_strings: args.eval_strings,
        norm_place: if args.post_ln {
            crate::model::config::NormPlace::Post
        } else {
            crate::model::config::NormPlace::Pre
        },
        progress: std::io::IsTerminal::is_terminal(&std::io::stderr()),
    }
    .train()?;
    eprintln!(
        "exact match {:.1}% on held-out strings; wrote {}",
        100.0 * outcome.exact_match,
        args.out.display()
    );
    Ok(())
}

fn io(path: &std::path::Path) -> impl Fn(std::io::Error) -> VizError + '_ {
    move |e| VizError::Io {
        path: path.display().to_string(),
        reason: e.to_string(),
    }
}

/// "A-B" as (A, B), A at least 1 and at most B.
fn parse_range(text: &str) -> std::result::Result<(u32, u32), String> {
    let (a, b) = text
        .split_once('-')
        .ok_or_else(|| format!("{text:?} is not A-B"))?;
    let (a, b): (u32, u32) = (
        a.trim()
            .parse()
            .map_err(|_| format!("{a:?} is not a count"))?,
        b.trim()
            .parse()
            .map_err(|_| format!("{b:?} is not a count"))?,
    );
    if a == 0 || a > b {
        return Err(format!("{text:?}: need 1 <= A <= B"));
    }
    Ok((a, b))
}

/// Prompts the model continues in `behaviours`.
pub const CONTINUED: [&str; 5] = [
    "Mary met John at the park. She",
    "The code on the door was 4 1 7 9. Tom said the code again: 4",
    "When Anna and Tom went to the market, Tom gave a book to",
    "It was a cold morning, and the old man",
    "The ship sailed out of the harbour",
];

pub fn behaviours(
    model: &crate::Transformer,
    corpus: &std::path::Path,
    count: usize,
    seed: u64,
) -> Result<()> {
    let corpus = Corpus::read(corpus)?;
    // The lecture tokenizers start every text with their one special token.
    let start = model.tokenizer.encode("a", 4)?;
    let bos = match start.tokens.first() {
        Some(t) if t.special => t.id,
        _ => {
            return Err(VizError::Training(format!(
                "{} is not a lecture decoder: its texts do not start with a special token",
                model.config.name
            )))
        }
    };
    let heads = HeadProbe::new(&corpus.held_out, bos, None).measure(model)?;
    let mut lines = vec![heads.summary()];
    let cases = pronoun_cases(seed, count);
    let pronouns = pronoun_heads(model, &cases)?;
    let best = pronouns[0];
    lines.push(format!(
        "pronouns: layer {} head {} puts its strongest weight on the antecedent of {:.1}% of the pronouns of {} held-out sentences",
        best.layer,
        best.head,
        100.0 * best.share,
        count
    ));
    // The same head by kind of pronoun, beside each kind's own best head: a model may find
    // people with one head and things with another.
    for (kind, words) in PRONOUN_KINDS {
        let some = of_kind(&cases, words);
        let n: usize = some.iter().map(|c| c.references.len()).sum();
        if n == 0 {
            continue;
        }
        let heads = pronoun_heads(model, &some)?;
        let share_of = |layer: usize, head: usize| {
            heads
                .iter()
                .find(|h| (h.layer, h.head) == (layer, head))
                .map_or(0.0, |h| h.share)
        };
        lines.push(format!(
            "  {kind}: {:.1}% of {n} (the best for these: layer {} head {}, {:.1}%)",
            100.0 * share_of(best.layer, best.head),
            heads[0].layer,
            heads[0].head,
            100.0 * heads[0].share
        ));
    }
    // A vocabulary that cuts names into pieces cannot name one person in one token.
    let prompts = ioi_prompts(seed, count, Split::HeldOut);
    lines.push(match ioi_report(model, &prompts) {
        Ok(ioi) => format!(
            "indirect objects: the answer first in {:.1}% of {} held-out prompts, above the repeated name in {:.1}% (mean probability {:.3} against {:.3})",
            100.0 * ioi.first,
            ioi.prompts,
            100.0 * ioi.beats_other,
            ioi.answer_probability,
            ioi.other_probability
        ),
        Err(e) => format!("indirect objects: not measured: {e}"),
    });
    // The same prompts by template: a template the model gets wrong shows here.
    let mut templates: Vec<&str> = prompts.iter().map(|p| p.template).collect();
    templates.sort_unstable();
    templates.dedup();
    for template in templates {
        let some: Vec<_> = prompts
            .iter()
            .filter(|p| p.template == template)
            .cloned()
            .collect();
        if let Ok(ioi) = ioi_report(model, &some) {
            lines.push(format!(
                "  {:.1}% of {} from {template:?}",
                100.0 * ioi.first,
                ioi.prompts
            ));
        }
    }
    for prompt in CONTINUED {
        let g = generate(model, prompt, 16, &SamplingSettings::greedy())?;
        lines.push(format!("{prompt:?} -> {:?}", g.text));
    }
    print_lines(&lines)
}

/// One line each on standard output; a reader that closes the pipe early ends it quietly.
fn print_lines(lines: &[String]) -> Result<()> {
    super::print_stdout(|out| lines.iter().try_for_each(|line| writeln!(out, "{line}")))
}

pub fn print_stories(args: StoriesArgs) -> Result<()> {
    if args.roles {
        return print_lines(&role_stories(args.seed, args.count));
    }
    if args.drills {
        let extras = DrillExtras {
            things: args.drill_things,
            word_first: false, // no words given to put first
            verbs: args.drill_verbs,
            solo: args.drill_solo,
            watched_things: args.drill_watched_things,
            ioi_only: args.drill_ioi_only,
            placeless: args.drill_placeless,
            corpus_asides: false, // no corpus to take sentences from
        };
        return print_lines(&drill_stories(args.seed, args.count, &[], extras));
    }
    let split = if args.held_out {
        Split::HeldOut
    } else {
        Split::Train
    };
    print_lines(&stories(args.seed, args.count, split))
}

pub fn vocab(args: VocabArgs) -> Result<()> {
    let mut corpus = Corpus::read(&args.corpus)?;
    corpus.add_stories(args.stories);
    if !(258..=crate::tokenize::vocab_file::MAX_TOKENS).contains(&args.size) {
        return Err(VizError::Training(format!(
            "--size {} must be 258 to {}",
            args.size,
            crate::tokenize::vocab_file::MAX_TOKENS
        )));
    }
    let started = std::time::Instant::now();
    let file = learn_vocab(&corpus.train, args.size)?;
    std::fs::write(&args.out, file.to_json()).map_err(io(&args.out))?;
    eprintln!(
        "learned {} tokens ({} merges) from {} documents in {:.1} s: {}",
        file.tokens.len(),
        file.merges.len(),
        corpus.train.len(),
        started.elapsed().as_secs_f64(),
        args.out.display()
    );
    let tokenizer = file.tokenizer()?;
    let report = vocab_report(&tokenizer, &corpus.held_out, 1000)?;
    let shown: Vec<String> = report
        .split
        .iter()
        .take(12)
        .map(|(word, pieces)| format!("{word} = {}", pieces.join("|")))
        .collect();
    eprintln!(
        "{} of the {} most frequent words of the held-out text are one token ({:.1}%); the most frequent others: {}",
        report.single,
        report.words,
        100.0 * report.single as f64 / report.words.max(1) as f64,
        shown.join(", ")
    );
    let pieces = text_tokens(&tokenizer, &args.sentence)?;
    eprintln!(
        "{:.2} tokens a word: {}",
        tokens_per_word(&tokenizer, &args.sentence)?,
        pieces.join("|")
    );
    Ok(())
}

pub fn train(args: TrainArgs) -> Result<()> {
    let vocab_json = std::fs::read_to_string(&args.vocab).map_err(io(&args.vocab))?;
    let file = VocabFile::parse(&vocab_json)?;
    let bos = file.bos;
    let tokenizer = file.clone().tokenizer()?;
    let mut config = lecture::preset(&args.model, tokenizer.vocab_size())
        .ok_or_else(|| VizError::UnknownModel(args.model.clone(), lecture::DECODERS.join(", ")))?;
    if args.untied {
        config.lm_head = crate::model::config::LmHead::Separate;
    }
    let mut corpus = Corpus::read(&args.corpus)?;
    corpus.add_stories(args.stories);
    corpus.add_role_stories(args.role_stories);
    let started = std::time::Instant::now();
    let train = token_stream(&corpus.train, &tokenizer, bos)?;
    let held_out = token_stream(&corpus.held_out, &tokenizer, bos)?;
    let drills = token_stream(
        &drill_text(
            args.drill_stories,
            &corpus.train,
            DrillExtras {
                things: args.drill_things,
                word_first: args.drill_word_first,
                verbs: args.drill_verbs,
                solo: args.drill_solo,
                watched_things: args.drill_watched_things,
                ioi_only: args.drill_ioi_only,
                placeless: args.drill_placeless,
                corpus_asides: args.drill_corpus_asides,
            },
        ),
        &tokenizer,
        bos,
    )?;
    let (baseline, lambda) = bigram_loss(&train, &held_out, tokenizer.vocab_size());
    eprintln!("tokenized in {:.1} s; bigram baseline on held-out text: {baseline:.4} nats/token (mixing weight {lambda})", started.elapsed().as_secs_f64());
    std::fs::create_dir_all(&args.out).map_err(io(&args.out))?;
    let tokenizer_path = args.out.join("tokenizer.json");
    std::fs::write(&tokenizer_path, &vocab_json).map_err(io(&tokenizer_path))?;
    let settings = Settings {
        steps: args.steps,
        batch: args.batch,
        sequence: args.sequence,
        learning_rate: args.learning_rate,
        warmup_steps: args.warmup,
        final_rate_share: 0.1,
        weight_decay: args.weight_decay,
        clip_norm: args.clip,
        seed: args.seed,
        eval_every: args.eval_every,
        checkpoint_every: args.checkpoint_every,
        beta2: args.beta2,
        mixture: Mixture {
            random_repeat: args.random_repeat,
            copied_span: args.copied_span,
            pool: args.run_pool,
            run_lengths: args.run_lengths,
            zipf: args.run_zipf,
            drills: args.drills,
            drill_starts: args.drill_starts,
        },
        projection_std: args.projection_std,
        shards: 1,
        pool_doubling: args.early_pool_doubling,
        early: (args.early_steps > 0).then_some((
            args.early_steps,
            Mixture {
                random_repeat: args.early_random_repeat,
                copied_span: args.early_copied_span,
                pool: args.early_run_pool,
                run_lengths: args.early_run_lengths,
                zipf: args.early_run_zipf,
                drills: 0,
                drill_starts: 0,
            },
        )),
    };
    let probe =
        HeadProbe::new(&corpus.held_out, bos, Some(file.clone())).with_behaviours(args.behaviours);
    let log_path = args.out.join("train.log");
    if !args.resume {
        let _ = std::fs::remove_file(&log_path);
    }
    let mut line =
        format!("bigram baseline (held out): {baseline:.4} nats/token, mixing weight {lambda}\n");
    // The settings line below records the mixture, not how its texts were written: the drill
    // options are said here, so that the log names every option that shaped the run.
    if args.drill_stories > 0 {
        let options: Vec<&str> = [
            (args.drill_things, "--drill-things"),
            (args.drill_word_first, "--drill-word-first"),
            (args.drill_verbs, "--drill-verbs"),
            (args.drill_solo, "--drill-solo"),
            (args.drill_watched_things, "--drill-watched-things"),
            (args.drill_ioi_only, "--drill-ioi-only"),
            (args.drill_placeless, "--drill-placeless"),
            (args.drill_corpus_asides, "--drill-corpus-asides"),
        ]
        .iter()
        .filter_map(|&(on, name)| on.then_some(name))
        .collect();
        line.push_str(&format!(
            "texts: {} stories, {} role stories, {} drill stories; drill options: {}\n",
            args.stories,
            args.role_stories,
            args.drill_stories,
            if options.is_empty() {
                "none".to_string()
            } else {
                options.join(" ")
            }
        ));
    }
    // A resumed run's log already names the baseline.
    if !args.resume || !log_path.exists() {
        std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&log_path)
            .and_then(|mut f| std::io::Write::write_all(&mut f, line.as_bytes()))
            .map_err(io(&log_path))?;
    }
    let outcome = Run {
        name: args.model.clone(),
        config,
        settings,
        train: &train,
        drills: &drills,
        held_out: &held_out,
        bos,
        out: args.out.clone(),
        resume: args.resume,
        baseline: Some(baseline),
        progress: std::io::IsTerminal::is_terminal(&std::io::stderr()),
        stop_after: None,
        probe: Some(&probe),
        init_from: args.init_from.clone(),
    }
    .train()?;
    eprintln!(
        "held-out loss {:.4} against the bigram baseline's {baseline:.4}; wrote {}",
        outcome.final_held_out,
        args.out.display()
    );
    Ok(())
}

/// `train-page`: a page run, natively.
pub fn train_page(args: TrainPageArgs) -> Result<()> {
    let settings = match (&args.preset, &args.settings) {
        (Some(name), _) => PageSettings::preset(name).ok_or_else(|| {
            VizError::Training(format!(
                "no preset `{name}`: previous-token, induction or stories"
            ))
        })?,
        (None, Some(json)) => serde_json::from_str(json)
            .map_err(|e| VizError::Training(format!("--settings: {e}")))?,
        (None, None) => return Err(VizError::Training("give --preset or --settings".into())),
    };
    let chapters = if settings.task == Task::Text {
        let dir = args.corpus.join("datasets-moby-dick");
        let chapters = corpus_files()
            .iter()
            .map(|name| {
                let path = dir.join(name);
                std::fs::read_to_string(&path).map_err(io(&path))
            })
            .collect::<Result<Vec<String>>>()?;
        Some(chapters)
    } else {
        None
    };
    let mut run = PageRun::new(settings, chapters.as_deref())?.on_threads(args.threads);
    if args.gradients {
        let gradients = run.gradients()?;
        return super::print_stdout(|out| {
            serde_json::to_writer(&mut *out, &gradients).map_err(std::io::Error::other)?;
            writeln!(out)
        });
    }
    let steps = args
        .steps
        .unwrap_or(run.settings.steps)
        .min(run.settings.steps);
    let started = std::time::Instant::now();
    let mut lines = Vec::new();
    while run.done < steps {
        let reports = run.train(50.min(steps - run.done))?;
        let loss = reports.last().map(|r| r.loss).unwrap_or(f64::NAN);
        let evaluation = run.evaluate()?;
        let best = |scores: &[f32]| {
            let (i, s) =
                scores
                    .iter()
                    .enumerate()
                    .fold((0, f32::MIN), |b, (i, &s)| if s > b.1 { (i, s) } else { b });
            format!(
                "{s:.2} (L{} H{})",
                i / run.settings.heads,
                i % run.settings.heads
            )
        };
        let seconds = started.elapsed().as_secs_f64();
        let line = format!(
            "step {} · loss {loss:.3} · held-out {:.3} · previous-token {} · induction {} · copy loss {:.2} -> {:.2} · {:.0} tokens/s · {seconds:.1} s",
            run.done,
            evaluation.held_out,
            best(&evaluation.previous),
            best(&evaluation.induction),
            evaluation.copy_loss[0],
            evaluation.copy_loss[1],
            (run.done * run.tokens_per_step()) as f64 / seconds.max(1e-9),
        );
        println!("{line}");
        lines.push(line);
    }
    if let Some(dir) = &args.out {
        std::fs::create_dir_all(dir).map_err(io(dir))?;
        let files = run.export()?;
        for (name, bytes) in [
            ("config.json", files.config.as_bytes()),
            ("tokenizer.json", files.tokenizer.as_bytes()),
            ("model.safetensors", &files.weights[..]),
        ] {
            let path = dir.join(name);
            std::fs::write(&path, bytes).map_err(io(&path))?;
        }
    }
    Ok(())
}
