//! A bitmap backend whose text is laid out glyph by glyph from the embedded font, correctly.
//!
//! plotters 0.3.7 draws ab_glyph text by placing each glyph's pixel box at the pen
//! position: the left side bearing is lost (narrow letters shift left, "po l i cy") and
//! each box's top is truncated towards zero, so small glyphs such as "." land a pixel off
//! the baseline. This wrapper places glyphs at their outline position on one baseline
//! and leaves every other drawing call to the wrapped backend.

use ab_glyph::{point, Font, FontRef, PxScale, ScaleFont};
use plotters::prelude::DrawingBackend;
use plotters_backend::text_anchor::{HPos, VPos};
use plotters_backend::{
    BackendColor, BackendCoord, BackendStyle, BackendTextStyle, DrawingErrorKind,
};

/// DejaVu Sans' cap height over its ascent-descent height (1493 / 2384 font units): the
/// baseline goes where capitals sit centred in the box plotters lays text out in.
const CAP_OVER_HEIGHT: f32 = 0.626;

/// The box height plotters' ab_glyph layout gives a text of size s is s / 1.24.
const BOX_OVER_SIZE: f32 = 1.0 / 1.24;

/// `B` with its text drawn from `font`.
pub(super) struct Crisp<B> {
    inner: B,
    font: FontRef<'static>,
}

impl<B> Crisp<B> {
    pub(super) fn new(inner: B, font: FontRef<'static>) -> Crisp<B> {
        Crisp { inner, font }
    }
}

/// Where the glyphs of `text` go at pixel `scale`: (glyph, pen x), and the text's width.
/// Advances and kerning are the ones plotters measures text with, so centring holds.
fn layout(font: &FontRef<'static>, scale: f32, text: &str) -> (Vec<(ab_glyph::GlyphId, f32)>, f32) {
    let f = font.as_scaled(PxScale::from(scale));
    let mut x = 0.0f32;
    let mut prev = None;
    let mut glyphs = Vec::new();
    for c in text.chars() {
        let id = f.glyph_id(c);
        if let Some(p) = prev {
            x += f.kern(p, id);
        }
        glyphs.push((id, x));
        x += f.h_advance(id);
        prev = Some(id);
    }
    (glyphs, x)
}

impl<B: DrawingBackend> DrawingBackend for Crisp<B> {
    type ErrorType = B::ErrorType;

    fn get_size(&self) -> (u32, u32) {
        self.inner.get_size()
    }

    fn ensure_prepared(&mut self) -> Result<(), DrawingErrorKind<B::ErrorType>> {
        self.inner.ensure_prepared()
    }

    fn present(&mut self) -> Result<(), DrawingErrorKind<B::ErrorType>> {
        self.inner.present()
    }

    fn draw_pixel(
        &mut self,
        point: BackendCoord,
        color: BackendColor,
    ) -> Result<(), DrawingErrorKind<B::ErrorType>> {
        self.inner.draw_pixel(point, color)
    }

    fn draw_line<S: BackendStyle>(
        &mut self,
        from: BackendCoord,
        to: BackendCoord,
        style: &S,
    ) -> Result<(), DrawingErrorKind<B::ErrorType>> {
        self.inner.draw_line(from, to, style)
    }

    fn draw_rect<S: BackendStyle>(
        &mut self,
        upper_left: BackendCoord,
        bottom_right: BackendCoord,
        style: &S,
        fill: bool,
    ) -> Result<(), DrawingErrorKind<B::ErrorType>> {
        self.inner.draw_rect(upper_left, bottom_right, style, fill)
    }

    fn draw_path<S: BackendStyle, I: IntoIterator<Item = BackendCoord>>(
        &mut self,
        path: I,
        style: &S,
    ) -> Result<(), DrawingErrorKind<B::ErrorType>> {
        self.inner.draw_path(path, style)
    }

    fn draw_circle<S: BackendStyle>(
        &mut self,
        center: BackendCoord,
        radius: u32,
        style: &S,
        fill: bool,
    ) -> Result<(), DrawingErrorKind<B::ErrorType>> {
        self.inner.draw_circle(center, radius, style, fill)
    }

    fn fill_polygon<S: BackendStyle, I: IntoIterator<Item = BackendCoord>>(
        &mut self,
        vert: I,
        style: &S,
    ) -> Result<(), DrawingErrorKind<B::ErrorType>> {
        self.inner.fill_polygon(vert, style)
    }

    fn blit_bitmap(
        &mut self,
        pos: BackendCoord,
        size: (u32, u32),
        src: &[u8],
    ) -> Result<(), DrawingErrorKind<B::ErrorType>> {
        self.inner.blit_bitmap(pos, size, src)
    }

    fn draw_text<S: BackendTextStyle>(
        &mut self,
        text: &str,
        style: &S,
        pos: BackendCoord,
    ) -> Result<(), DrawingErrorKind<B::ErrorType>> {
        let color = style.color();
        if color.alpha == 0.0 {
            return Ok(());
        }
        let scale = style.size() as f32;
        let (glyphs, width) = layout(&self.font, scale, text);
        let height = scale * BOX_OVER_SIZE;
        let dx = match style.anchor().h_pos {
            HPos::Left => 0.0,
            HPos::Right => -width,
            HPos::Center => -width / 2.0,
        };
        let dy = match style.anchor().v_pos {
            VPos::Top => 0.0,
            VPos::Center => -height / 2.0,
            VPos::Bottom => -height,
        };
        let baseline = dy + (height + scale * CAP_OVER_HEIGHT) / 2.0;
        let trans = style.transform();
        let (w, h) = self.get_size();
        let mut pixels = Vec::new();
        for (id, x) in glyphs {
            let glyph = id.with_scale_and_position(scale, point(dx + x, baseline));
            if let Some(outline) = self.font.outline_glyph(glyph) {
                let b = outline.px_bounds();
                outline.draw(|gx, gy, cov| {
                    pixels.push((b.min.x as i32 + gx as i32, b.min.y as i32 + gy as i32, cov))
                });
            }
        }
        for (x, y, cov) in pixels {
            let (x, y) = trans.transform(x, y);
            let (x, y) = (pos.0 + x, pos.1 + y);
            if x >= 0 && x < w as i32 && y >= 0 && y < h as i32 && cov > 0.0 {
                let c = BackendColor {
                    alpha: color.alpha * f64::from(cov.min(1.0)),
                    rgb: color.rgb,
                };
                self.inner.draw_pixel((x, y), c)?;
            }
        }
        Ok(())
    }
}
