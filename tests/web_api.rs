//! The page's wasm API (`Viz`) in headless Chromium, through wasm-bindgen-test and
//! chromedriver: load the real MiniLM (f16, embedded at compile time), trace sentences,
//! draw every view on real canvases, export SVG, and report bad input as errors.
#![cfg(target_arch = "wasm32")]

use transformer_viz::web::Viz;
use wasm_bindgen::{JsCast, JsValue};
use wasm_bindgen_test::*;
use web_sys::{CanvasRenderingContext2d, HtmlCanvasElement};

wasm_bindgen_test_configure!(run_in_browser);

const CONFIG: &str = include_str!("../models/minilm-l6/config.json");
const TOKENIZER: &str = include_str!("../models/minilm-l6/tokenizer.json");
const WEIGHTS: &[u8] = include_bytes!("../models/minilm-l6/model.f16.safetensors");

fn canvas(width: u32, height: u32) -> HtmlCanvasElement {
    let document = web_sys::window().unwrap().document().unwrap();
    let c: HtmlCanvasElement = document
        .create_element("canvas")
        .unwrap()
        .dyn_into()
        .unwrap();
    c.set_width(width);
    c.set_height(height);
    document.body().unwrap().append_child(&c).unwrap();
    c
}

fn pixels(c: &HtmlCanvasElement) -> Vec<u8> {
    let ctx: CanvasRenderingContext2d = c.get_context("2d").unwrap().unwrap().dyn_into().unwrap();
    ctx.get_image_data(0.0, 0.0, c.width() as f64, c.height() as f64)
        .unwrap()
        .data()
        .0
}

const VIEWS: &[&str] = &[
    r#"{"kind":"head","layer":1,"head":2}"#,
    r#"{"kind":"grid","layer":1,"head":2}"#,
    r#"{"kind":"lines","layer":0,"head":2,"focus":null}"#,
    r#"{"kind":"position_table"}"#,
    r#"{"kind":"position_waves","dims":[0,1,5]}"#,
    r#"{"kind":"position_similarity"}"#,
    r#"{"kind":"sinusoidal_similarity"}"#,
    r#"{"kind":"sinusoidal_table"}"#,
    r#"{"kind":"sinusoidal_waves","dims":[0,1,40]}"#,
    r#"{"kind":"norm","index":3}"#,
    r#"{"kind":"norm_parameters","index":3}"#,
    r#"{"kind":"residual"}"#,
    r#"{"kind":"residual","tokens":[0,2]}"#,
    r#"{"kind":"step","index":10,"head":4}"#,
];

#[wasm_bindgen_test]
fn every_view_draws_and_follows_the_sentence() {
    let mut viz = Viz::new("minilm-l6", CONFIG, TOKENIZER, WEIGHTS.to_vec()).unwrap();
    assert_eq!(viz.backend(), "CPU (WebAssembly)");
    viz.set_text("The cat sat on the mat.").unwrap();
    let first: Vec<Vec<u8>> = VIEWS
        .iter()
        .map(|v| {
            let c = canvas(600, 420);
            let drawn = viz
                .draw(c.clone(), v)
                .unwrap_or_else(|e| panic!("{v}: {:?}", JsValue::from(e)));
            // What it drew, for hover: in the canvas's CSS pixels (a scale of 1 here).
            let width = js_sys::Reflect::get(&drawn.value().unwrap(), &"width".into()).unwrap();
            assert_eq!(
                width.as_f64(),
                Some(600.0),
                "{v}: what it drew says its width"
            );
            let p = pixels(&c);
            let non_white = p
                .chunks_exact(4)
                .filter(|px| px[0] < 240 || px[1] < 240 || px[2] < 240)
                .count();
            assert!(
                non_white > 2000,
                "{v} drew almost nothing ({non_white} pixels)"
            );
            p
        })
        .collect();
    viz.set_text("Stock prices rose sharply after the announcement yesterday.")
        .unwrap();
    for (v, before) in VIEWS.iter().zip(&first) {
        let c = canvas(600, 420);
        viz.draw(c.clone(), v).unwrap();
        let model_only =
            v.contains("position") || v.contains("sinusoidal") || v.contains("norm_parameters");
        assert_eq!(
            pixels(&c) == *before,
            model_only,
            "{v}: the picture should {}change with the sentence",
            if model_only { "not " } else { "" }
        );
    }
}

#[wasm_bindgen_test]
fn attention_rows_sum_to_one_and_svg_exports() {
    let mut viz = Viz::new("minilm-l6", CONFIG, TOKENIZER, WEIGHTS.to_vec()).unwrap();
    viz.set_text("Attention rows are probability distributions.")
        .unwrap();
    let a = viz.attention(2, 5).unwrap();
    let t = (a.len() as f64).sqrt() as usize;
    assert_eq!(t * t, a.len());
    for row in a.chunks(t) {
        assert!((row.iter().sum::<f32>() - 1.0).abs() < 1e-4);
    }
    let svg = viz.svg(VIEWS[0], 500, 400).unwrap();
    assert!(svg.starts_with("<svg") && svg.trim_end().ends_with("</svg>"));
    assert!(svg.contains("[CLS]"));
    let trace: serde_json::Value = serde_json::from_str(&viz.trace_json().unwrap()).unwrap();
    assert_eq!(trace["tokens"].as_array().unwrap().len(), t);
}

#[wasm_bindgen_test]
fn bad_input_and_bad_files_are_errors_not_panics() {
    let mut viz = Viz::new("minilm-l6", CONFIG, TOKENIZER, WEIGHTS.to_vec()).unwrap();
    assert!(viz.set_text("   ").is_err());
    let long = "word ".repeat(600);
    viz.set_text(&long).unwrap();
    assert_eq!(viz.attention(0, 0).unwrap().len(), 512 * 512);
    assert!(viz
        .draw(canvas(300, 300), r#"{"kind":"head","layer":9,"head":0}"#)
        .is_err());
    assert!(viz
        .draw(canvas(300, 300), r#"{"kind":"no_such_view"}"#)
        .is_err());
    // A feature or a token that does not exist is an error, not a silently shorter chart.
    assert!(viz
        .draw(
            canvas(300, 300),
            r#"{"kind":"sinusoidal_waves","dims":[0,999999]}"#
        )
        .is_err());
    assert!(viz
        .draw(canvas(300, 300), r#"{"kind":"residual","tokens":[9999]}"#)
        .is_err());
    assert!(Viz::new("minilm-l6", CONFIG, TOKENIZER, WEIGHTS[..1000].to_vec()).is_err());
    assert!(Viz::new("gpt-9", CONFIG, TOKENIZER, WEIGHTS.to_vec()).is_err());
    assert_eq!(
        viz.backend(),
        "CPU (WebAssembly)",
        "the plain build computes on one thread"
    );
}

#[wasm_bindgen_test]
fn text_with_the_same_tokens_keeps_the_last_pass() {
    let field =
        |summary: &JsValue, name: &str| js_sys::Reflect::get(summary, &name.into()).unwrap();
    let mut viz = Viz::new("minilm-l6", CONFIG, TOKENIZER, WEIGHTS.to_vec()).unwrap();
    let first = viz.set_text("The cat sat").unwrap();
    assert_eq!(field(&first, "recomputed"), JsValue::TRUE);
    let before = viz.attention(3, 1).unwrap();
    // A trailing space and a different case split into the same tokens (the model lowercases).
    for same in ["The cat sat ", "the CAT sat"] {
        let summary = viz.set_text(same).unwrap();
        assert_eq!(field(&summary, "recomputed"), JsValue::FALSE, "{same:?}");
        assert_eq!(viz.attention(3, 1).unwrap(), before);
        let trace: serde_json::Value = serde_json::from_str(&viz.trace_json().unwrap()).unwrap();
        assert_eq!(trace["text"], same, "the trace keeps the text as typed");
    }
    let other = viz.set_text("The cat sat down").unwrap();
    assert_eq!(field(&other, "recomputed"), JsValue::TRUE);
    assert_ne!(viz.attention(3, 1).unwrap().len(), before.len());
}
