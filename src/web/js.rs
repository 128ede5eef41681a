//! What every part of the browser API shares: errors and values handed to JavaScript, and
//! the page's clock.

use serde::Serialize;
use wasm_bindgen::prelude::*;

use crate::error::VizError;

pub(super) fn js_err(e: VizError) -> JsError {
    JsError::new(&e.to_string())
}

pub(super) fn to_js<T: Serialize>(value: &T) -> Result<JsValue, JsError> {
    value
        .serialize(&serde_wasm_bindgen::Serializer::json_compatible())
        .map_err(|e| JsError::new(&e.to_string()))
}

#[wasm_bindgen]
extern "C" {
    /// The page's clock in milliseconds, to a few microseconds on a cross-origin isolated page
    /// (`Date.now()` counts whole milliseconds: too coarse for a short pass).
    #[wasm_bindgen(js_namespace = performance, js_name = now)]
    fn performance_now() -> f64;
}

pub(super) fn now_ms() -> f64 {
    performance_now()
}
