//! Each part's vote on the next token (`analysis::attribution`): a bar a part, in the order the
//! parts write into the residual stream (the embedding first, then each layer's heads and
//! feed-forward network), to the right (blue) when the part pushes the token's logit up, to
//! the left (vermillion) when it pushes it down.

use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, VPos};
use serde::Serialize;

use super::colors::CATEGORICAL;
use super::furniture::fitting_title;
use super::prediction::token_label;
use super::Canvas;
use super::{anchored_text, draw_err, short_label};
use crate::analysis::ablation::Switch;
use crate::analysis::attribution::attribution;
use crate::error::Result;
use crate::trace::Trace;
use crate::Transformer;

const FOR: RGBColor = CATEGORICAL[0];
const AGAINST: RGBColor = CATEGORICAL[5];
/// The most bars drawn: SmolLM2 has 301 parts; the strongest votes are kept, in stream order.
const MOST_BARS: usize = 36;

/// One bar as drawn.
#[derive(Debug, Clone, Serialize)]
pub struct VoteBar {
    pub label: String,
    pub logit: f32,
    pub layer: Option<usize>,
    pub head: Option<usize>,
    /// A head's, cross-attention head's or feed-forward layer's bar: the part (the page
    /// lists the tokens it promotes when the bar is clicked).
    pub part: Option<crate::analysis::ablation::Part>,
    /// The bar's row on the chart, in chart pixels.
    pub top: i32,
    pub bottom: i32,
}

#[derive(Debug, Clone, Serialize)]
pub struct VotesDrawn {
    pub token: String,
    pub logit: f32,
    pub exact: bool,
    pub bias_term: f32,
    pub bars: Vec<VoteBar>,
    /// Parts left off the chart (weakest votes), when there are more than it holds.
    pub hidden: usize,
    pub caption: String,
}

/// Draws the votes on `token` (default: the most likely next token) after `trace`'s text;
/// `off`: the parts the trace was computed without.
pub fn draw_votes<DB: Canvas>(
    area: &DrawingArea<DB, Shift>,
    model: &Transformer,
    trace: &Trace,
    token: Option<u32>,
    off: &[Switch],
) -> Result<VotesDrawn> {
    let a = attribution(model, trace, token, off)?;
    area.fill(&WHITE).map_err(draw_err)?;
    let (width, height) = area.dim_in_pixel();
    let (w, h) = (width as i32, height as i32);
    let font = if width < 420 { 11 } else { 13 };
    // The strongest votes, in the order of the stream.
    let mut order: Vec<usize> = (0..a.votes.len()).collect();
    order.sort_by(|&i, &j| a.votes[j].logit.abs().total_cmp(&a.votes[i].logit.abs()));
    order.truncate(MOST_BARS);
    order.sort_unstable();
    let hidden = a.votes.len() - order.len();

    let token_text = token_label(&a.token);
    let title = fitting_title(
        area,
        font + 3,
        &[
            &format!(
                "Each part's vote on “{}” (logit {:.2})",
                short_label(&token_text, 16),
                a.logit
            ),
            "Each part's vote on the next token",
        ],
    );
    area.draw(&Text::new(
        title,
        (w / 2, 4),
        anchored_text(font + 3, HPos::Center, VPos::Top),
    ))
    .map_err(draw_err)?;
    let caption = if a.exact {
        format!(
            "shares of the logit through the final norm: they add up to {:.2}, the logit less the norm's bias term {:.2}{}",
            a.logit - a.bias_term,
            a.bias_term,
            if hidden > 0 { format!("; the {} strongest of {} parts", order.len(), a.votes.len()) } else { String::new() }
        )
    } else {
        format!(
            "post-LN: how far the logit falls when each part is switched off (they do not add up){}",
            if hidden > 0 { format!("; the {} strongest of {} parts", order.len(), a.votes.len()) } else { String::new() }
        )
    };
    let caption_y = 4 + font as i32 + 10;
    area.draw(&Text::new(
        short_label(&caption, (w / (font as i32 * 11 / 20)).max(20) as usize),
        (w / 2, caption_y),
        anchored_text(font.saturating_sub(2), HPos::Center, VPos::Top),
    ))
    .map_err(draw_err)?;

    let top_y = caption_y + font as i32 + 10;
    let row_h = ((h - top_y - 4) / order.len().max(1) as i32).max(6);
    let label_w = (w / 4).clamp(70, 170);
    let value_w = font as i32 * 5;
    let (x0, x1) = (label_w + 6, (w - value_w).max(label_w + 40));
    let largest = order
        .iter()
        .map(|&i| a.votes[i].logit.abs())
        .fold(1e-6f32, f32::max);
    let zero = (x0 + x1) / 2;
    let half = ((x1 - x0) / 2) as f32;
    area.draw(&PathElement::new(
        vec![
            (zero, top_y - 2),
            (zero, top_y + row_h * order.len() as i32),
        ],
        BLACK.mix(0.4),
    ))
    .map_err(draw_err)?;
    let mut bars = Vec::with_capacity(order.len());
    for (r, &i) in order.iter().enumerate() {
        let v = &a.votes[i];
        let (top, bottom) = (top_y + r as i32 * row_h, top_y + (r as i32 + 1) * row_h - 2);
        let end = zero + (v.logit / largest * half).round() as i32;
        let colour = if v.logit >= 0.0 { FOR } else { AGAINST };
        area.draw(&Rectangle::new(
            [
                (zero.min(end), top + 1),
                (zero.max(end).max(zero.min(end) + 1), bottom),
            ],
            colour.filled(),
        ))
        .map_err(draw_err)?;
        let mid = (top + bottom) / 2;
        area.draw(&Text::new(
            short_label(&v.label, 22),
            (label_w, mid),
            anchored_text(font.min(row_h.max(7) as u32), HPos::Right, VPos::Center),
        ))
        .map_err(draw_err)?;
        let (x, pos) = if v.logit >= 0.0 {
            (end + 4, HPos::Left)
        } else {
            (end - 4, HPos::Right)
        };
        area.draw(&Text::new(
            format!("{:+.2}", v.logit),
            (x, mid),
            anchored_text(
                font.saturating_sub(1).min(row_h.max(7) as u32),
                pos,
                VPos::Center,
            ),
        ))
        .map_err(draw_err)?;
        bars.push(VoteBar {
            label: v.label.clone(),
            logit: v.logit,
            layer: v.layer,
            head: v.head,
            part: v.part,
            top,
            bottom,
        });
    }
    Ok(VotesDrawn {
        token: a.token,
        logit: a.logit,
        exact: a.exact,
        bias_term: a.bias_term,
        bars,
        hidden,
        caption,
    })
}
