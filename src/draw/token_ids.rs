//! The tokenizer's output as the stepper shows it: one box a token with its vocabulary id
//! under it. Ids are names for vocabulary entries, not amounts, so they are written out
//! rather than coloured (a colour scale would suggest that id 2000 is "more" than id 1000).

use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, VPos};

use super::{anchored_text, draw_err, short_label, Canvas};
use crate::error::Result;
use crate::trace::TokenInfo;

/// The tokens in rows of boxes, as many as fit; the rest are counted in a last line.
pub fn draw_token_ids<DB: Canvas>(
    area: &DrawingArea<DB, Shift>,
    tokens: &[TokenInfo],
    title: &str,
) -> Result<()> {
    let (w, h) = area.dim_in_pixel();
    let (w, h) = (w as i32, h as i32);
    let font = if w < 420 { 11u32 } else { 14 };
    let (margin, gap, pad) = (8, 6, 6);
    area.draw(&Text::new(
        title.to_string(),
        (margin, margin),
        anchored_text(font + 3, HPos::Left, VPos::Top),
    ))
    .map_err(draw_err)?;
    let box_h = font as i32 * 2 + pad * 2 + 4;
    let (mut x, mut y) = (margin, margin + font as i32 + 16);
    let text_style = anchored_text(font, HPos::Center, VPos::Top);
    let id_style = anchored_text(font - 1, HPos::Center, VPos::Top).color(&RGBColor(70, 70, 70));
    let more_h = font as i32 + 8;
    // Every box is drawn first, then every text: a canvas then sets each font once rather
    // than once a token.
    let mut texts = Vec::new();
    for (i, token) in tokens.iter().enumerate() {
        let text = short_label(&token.text, 14);
        let id = token.id.to_string();
        let text_w = area
            .estimate_text_size(&text, &text_style)
            .map_err(draw_err)?
            .0 as i32;
        let id_w = area.estimate_text_size(&id, &id_style).map_err(draw_err)?.0 as i32;
        let box_w = text_w.max(id_w) + pad * 2;
        if x + box_w > w - margin && x > margin {
            (x, y) = (margin, y + box_h + gap);
        }
        // Room is kept for the line that counts the tokens left out.
        let room_below = if i + 1 < tokens.len() { more_h } else { 0 };
        if y + box_h > h - margin - room_below {
            let rest = tokens.len() - i;
            let more = format!(
                "… and {rest} more token{} (the chips above list them all)",
                if rest == 1 { "" } else { "s" }
            );
            area.draw(&Text::new(
                more,
                (margin, y.min(h - more_h)),
                anchored_text(font, HPos::Left, VPos::Top),
            ))
            .map_err(draw_err)?;
            break;
        }
        let fill = if token.special {
            RGBColor(255, 243, 214)
        } else {
            RGBColor(234, 242, 250)
        };
        area.draw(&Rectangle::new(
            [(x, y), (x + box_w, y + box_h)],
            fill.filled(),
        ))
        .map_err(draw_err)?;
        area.draw(&Rectangle::new(
            [(x, y), (x + box_w, y + box_h)],
            RGBColor(150, 160, 175).stroke_width(1),
        ))
        .map_err(draw_err)?;
        texts.push(Text::new(
            text,
            (x + box_w / 2, y + pad),
            text_style.clone(),
        ));
        texts.push(Text::new(
            id,
            (x + box_w / 2, y + pad + font as i32 + 4),
            id_style.clone(),
        ));
        x += box_w + gap;
    }
    for text in &texts {
        area.draw(text).map_err(draw_err)?;
    }
    Ok(())
}
