//! `render` draws every view as valid SVG and PNG, and the pictures depend on the sentence.

use crate::common;
use std::path::Path;

use common::*;
use transformer_viz::draw::files::render_all;
use transformer_viz::draw::head_grid::{score_grid, HeadPattern};

fn png_pixels(path: &Path) -> (u32, u32, Vec<u8>) {
    let bytes = std::fs::read(path).unwrap();
    assert_eq!(
        &bytes[..8],
        b"\x89PNG\r\n\x1a\n",
        "{} is not a PNG",
        path.display()
    );
    let w = u32::from_be_bytes(bytes[16..20].try_into().unwrap());
    let h = u32::from_be_bytes(bytes[20..24].try_into().unwrap());
    (w, h, bytes)
}

fn svg_ok(path: &Path) -> String {
    let text = std::fs::read_to_string(path).unwrap();
    assert!(
        text.starts_with("<svg") && text.trim_end().ends_with("</svg>"),
        "{} is not a whole SVG",
        path.display()
    );
    text
}

/// The contents of every <text> element.
fn svg_texts(svg: &str) -> Vec<String> {
    svg.split("<text")
        .skip(1)
        .filter_map(|part| {
            let body = &part[part.find('>')? + 1..];
            Some(body[..body.find("</text>")?].trim().to_string())
        })
        .collect()
}

#[test]
fn every_view_is_written_and_changes_with_the_sentence() {
    let model = minilm();
    let base = std::env::temp_dir().join(format!("tviz-render-{}", std::process::id()));
    let (a, b) = (base.join("a"), base.join("b"));
    let ta = model.trace("The cat sat on the mat.").unwrap();
    let tb = model
        .trace("Stock prices rose sharply after the announcement yesterday.")
        .unwrap();
    let na = render_all(model, &ta, &a, Some(1)).unwrap();
    let nb = render_all(model, &tb, &b, Some(1)).unwrap();
    assert_eq!(na, nb);
    // 12 heads x (heatmap + lines) + grid + 4 position views + 2 sinusoidal views
    // + 3 norms x (stages + parameters) + residual + 2 head grids (previous, first token),
    // each as SVG and PNG.
    assert_eq!(na, 2 * (12 * 2 + 1 + 4 + 2 + 3 * 2 + 1 + 2));
    let views = [
        "attention/layer1_head3",
        "attention/lines_layer1_head3",
        "attention_grid",
        "layer_norm/layer1_attn_norm",
        "residual_stream",
        "head_grid_previous",
    ];
    for view in views {
        let (wa, ha, pa) = png_pixels(&a.join(format!("{view}.png")));
        let (wb, hb, pb) = png_pixels(&b.join(format!("{view}.png")));
        assert!(wa > 100 && ha > 100 && wb > 100 && hb > 100);
        assert_ne!(
            pa, pb,
            "{view}: two different sentences gave the same picture"
        );
        let sa = svg_ok(&a.join(format!("{view}.svg")));
        let sb = svg_ok(&b.join(format!("{view}.svg")));
        assert_ne!(sa, sb, "{view}: two different sentences gave the same SVG");
    }
    // Token labels appear in the heatmap's SVG.
    let svg = svg_ok(&a.join("attention/layer1_head3.svg"));
    let texts = svg_texts(&svg);
    assert!(
        texts.iter().any(|t| t == "cat") && texts.iter().any(|t| t == "[CLS]"),
        "token labels missing: {texts:?}"
    );
    // Every token names its row and its column (9 tokens: nothing is thinned).
    for token in ta.token_texts() {
        assert_eq!(
            texts.iter().filter(|t| **t == token).count(),
            2 * ta.token_texts().iter().filter(|t| **t == token).count(),
            "{token} is not on both axes"
        );
    }
    // Each head's score is written in its cell of the head grid, as the hover gives it.
    let grid = score_grid(&ta, HeadPattern::Previous).unwrap().unwrap(); // (6 layers, 12 heads)
    let mut written: Vec<String> = svg_texts(&svg_ok(&a.join("head_grid_previous.svg")))
        .into_iter()
        .filter(|t| t.len() == 4 && t.parse::<f32>().is_ok())
        .collect();
    // The colour bar's two ends are numbers of that shape too.
    for end in ["0.00", "1.00"] {
        let at = written
            .iter()
            .position(|t| t == end)
            .expect("the colour bar's ends");
        written.remove(at);
    }
    let mut scores: Vec<String> = grid.iter().map(|s| format!("{s:.2}")).collect();
    written.sort();
    scores.sort();
    assert_eq!(written, scores, "the grid's cells hold its scores");
    // Large heatmaps and the grid are one embedded image with text around it: small files.
    for (view, most_kb) in [
        ("position_table", 400),
        ("attention_grid", 400),
        ("position_similarity", 200),
    ] {
        let svg = svg_ok(&a.join(format!("{view}.svg")));
        assert!(
            svg.len() < most_kb * 1024,
            "{view}.svg is {} KB",
            svg.len() / 1024
        );
        assert!(
            svg.contains("<image ") && svg.contains("data:image/png;base64,"),
            "{view}.svg has no embedded cells"
        );
        assert!(
            !svg.contains("tviz-cells"),
            "{view}.svg kept the placeholder of its cells"
        );
    }
    let table = svg_texts(&svg_ok(&a.join("position_table.svg")));
    assert!(
        table.iter().any(|t| t == "position p") && table.iter().any(|t| t == "feature i"),
        "axis names missing: {table:?}"
    );
    assert!(
        table.iter().any(|t| t.starts_with("Colours clipped")),
        "the clipped colour scale is not said: {table:?}"
    );
    // The learned position table is the model's, so it does not depend on the sentence.
    let pa = png_pixels(&a.join("position_table.png")).2;
    let pb = png_pixels(&b.join("position_table.png")).2;
    assert_eq!(pa, pb);
    std::fs::remove_dir_all(&base).ok();
}

/// Every step of the stepper draws at a projector's and a phone's size; at 16 tokens the
/// per-token heatmaps name every row and column, and the token ids are text, not colours.
#[test]
fn every_step_draws_with_every_token_named() {
    use plotters::prelude::*;
    use transformer_viz::draw::view::{draw_view, View};
    transformer_viz::draw::files::register_fonts();
    let model = minilm();
    let trace = model
        .trace("The animal didn't cross the street because it was too tired.")
        .unwrap();
    let tokens = trace.token_texts();
    assert_eq!(tokens.len(), 16);
    for (w, h) in [(1000u32, 550u32), (360, 340)] {
        let mut buffer = vec![0u8; (w * h * 3) as usize];
        for (index, step) in trace.steps.iter().enumerate() {
            let area = BitMapBackend::with_buffer(&mut buffer, (w, h)).into_drawing_area();
            let drawn = draw_view(&area, model, &trace, &View::Step { index, head: 0 }, false)
                .unwrap_or_else(|e| panic!("step {index} at {w}px: {e}"));
            drop(area);
            if index == 0 {
                assert!(
                    drawn.geometry.is_none() && drawn.values.is_empty(),
                    "token ids are drawn as a heatmap"
                );
                continue;
            }
            let labels = drawn.labels.expect("a heatmap reports its labels");
            if drawn.row_labels.len() == 16 {
                assert_eq!(
                    labels.rows.len(),
                    16,
                    "{} at {w}px: rows without their token",
                    step.name
                );
            }
            if drawn.col_labels.len() == 16 {
                assert_eq!(
                    labels.cols.len(),
                    16,
                    "{} at {w}px: columns without their token",
                    step.name
                );
            }
            if let Some(c) = drawn.clipped {
                assert!(
                    drawn.note.as_deref().is_some_and(|n| n.contains("clipped")),
                    "{}: clipped but not said",
                    step.name
                );
                assert!(c.min < c.low || c.max > c.high);
            }
        }
    }
}

/// Every SVG under `dir`, recursively.
fn svgs_under(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            svgs_under(&path, out);
        } else if path.extension().is_some_and(|e| e == "svg") {
            out.push(path);
        }
    }
}

/// Finite but extreme values (a norm's gamma scaled by 1e6 to 1e30: the stream's lengths reach
/// beyond what f32 squares hold) are drawn as any other trace: every view is written, and no axis tick or label reads
/// NaN or inf. (A pass that overflows is a typed error instead, `errors.rs`.)
#[test]
fn extreme_but_finite_values_draw_every_view_with_finite_axes() {
    use transformer_viz::checkpoints::fixture::{decoder_config, encoder_config, random_weights};
    use transformer_viz::tokenize::bytes::ByteTokenizer;
    use transformer_viz::{Transformer, VizError};
    let mut drawn = 0;
    for (config, scale) in [decoder_config(), encoder_config()]
        .into_iter()
        .flat_map(|c| [1e6f32, 1e12, 1e18, 1e24, 1e30].map(|s| (c.clone(), s)))
    {
        let mut weights = random_weights(&config, 3);
        weights.layers[0].ffn_norm.gamma.mapv_inplace(|g| g * scale);
        let model =
            Transformer::new(config.clone(), weights, Box::new(ByteTokenizer::default())).unwrap();
        let trace = match model.trace("a sentence") {
            Ok(trace) => trace,
            Err(VizError::NotFinite(_)) => continue,
            Err(e) => panic!("{e}"),
        };
        let dir = std::env::temp_dir().join(format!(
            "tviz-extreme-{}-{}-{scale}",
            std::process::id(),
            config.causal
        ));
        assert!(render_all(&model, &trace, &dir, None).unwrap() > 5);
        let mut files = Vec::new();
        svgs_under(&dir, &mut files);
        for file in &files {
            for text in svg_texts(&svg_ok(file)) {
                let words: Vec<&str> = text.split(|c: char| !c.is_alphanumeric()).collect();
                assert!(
                    !words.iter().any(|w| ["NaN", "inf", "Inf"].contains(w)),
                    "{} at scale {scale}: {text}",
                    file.display()
                );
            }
        }
        std::fs::remove_dir_all(&dir).ok();
        drawn += 1;
    }
    assert!(drawn >= 4, "only {drawn} models gave a finite pass");
}
