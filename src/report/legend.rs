//! A chart's legend, drawn beside the plot (never over its points): a
//! sample of each series' line and marker with its label, in one column
//! or two, labels too wide for the column shortened so that they stay
//! distinct (`labels::shorten`: field names move into the legend's
//! title); past what fits, the rest is one entry ("and N more").

use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use super::figure::{FONT, err, fit};
use super::labels::shorten;
use super::styles::{Marker, draw_marker};

/// One entry: its label and how its series is drawn.
#[derive(Clone, Debug)]
pub struct Entry {
    pub label: String,
    pub colour: RGBColor,
    pub dashed: bool,
    pub width: u32,
    pub marker: Option<Marker>,
}

/// A legend: an optional title (what the labels are values of) and its
/// entries.
#[derive(Clone, Debug, Default)]
pub struct Legend {
    pub title: Option<String>,
    pub entries: Vec<Entry>,
}

const LABEL_PX: u32 = 14;
const ROW: i32 = 20;
const SAMPLE: i32 = 30;
const PAD: i32 = 10;
/// The widest label of a single column, and of each of two.
const ONE_COLUMN: u32 = 260;
const TWO_COLUMNS: u32 = 150;

/// The layout of a legend in an area of a given height.
struct Plan {
    columns: usize,
    rows: usize,
    label_w: u32,
    /// Entries drawn (the last one may be "and N more").
    shown: usize,
    /// The title as drawn: the legend's own, and what the labels'
    /// values are of when their field names were moved out.
    title: Option<String>,
    /// Every entry's label as drawn.
    labels: Vec<String>,
}

impl Legend {
    fn rows_in(height: u32, title: bool) -> usize {
        let title = i32::from(title) * ROW;
        ((height as i32 - 2 * PAD - title) / ROW).max(1) as usize
    }

    fn plan<DB: DrawingBackend>(&self, area: &DrawingArea<DB, Shift>) -> Plan {
        let height = area.dim_in_pixel().1;
        let n = self.entries.len();
        let style = TextStyle::from((FONT, LABEL_PX).into_font());
        let width = |t: &str| area.estimate_text_size(t, &style).map_or(0, |s| s.0);
        let all: Vec<String> = self.entries.iter().map(|e| e.label.clone()).collect();
        // The labels shortened to a column's width (one column, or two
        // when the entries need more rows than one has), and the title
        // with what the labels became values of.
        let lay_out = |columns: usize| {
            let cap = if columns == 1 {
                ONE_COLUMN
            } else {
                TWO_COLUMNS
            };
            let short = shorten(&all, &|l: &str| width(l) <= cap);
            let title = match (&self.title, short.heading) {
                (Some(t), Some(h)) => Some(format!("{t} ({h})")),
                (t, h) => t.clone().or(h),
            };
            (short.labels, title, cap)
        };
        let mut columns = if n > Self::rows_in(height, self.title.is_some()) {
            2
        } else {
            1
        };
        let (mut labels, mut title, mut cap) = lay_out(columns);
        let rows = Self::rows_in(height, title.is_some());
        if columns == 1 && n > rows {
            columns = 2;
            (labels, title, cap) = lay_out(columns);
        }
        let shown = n.min(rows * columns);
        let widest = labels[..shown]
            .iter()
            .map(|l| width(l))
            .chain(std::iter::once(width("and 99999 more")))
            .max()
            .unwrap_or(0);
        Plan {
            columns,
            rows,
            label_w: widest.min(cap),
            shown,
            title,
            labels,
        }
    }

    /// The width the legend takes in `area` (0 when it has no entries).
    pub fn width<DB: DrawingBackend>(&self, area: &DrawingArea<DB, Shift>) -> u32 {
        if self.entries.is_empty() {
            return 0;
        }
        let p = self.plan(area);
        p.columns as u32 * (p.label_w + (SAMPLE + 3 * PAD) as u32) + PAD as u32
    }

    /// Draws the legend filling `area`.
    pub fn draw<DB: DrawingBackend>(&self, area: &DrawingArea<DB, Shift>) -> Result<(), String> {
        if self.entries.is_empty() {
            return Ok(());
        }
        let p = self.plan(area);
        let font = (FONT, LABEL_PX).into_font();
        let text = TextStyle::from(font.clone())
            .color(&BLACK)
            .pos(Pos::new(HPos::Left, VPos::Center));
        let col_w = p.label_w as i32 + SAMPLE + 3 * PAD;
        let mut y0 = PAD + ROW / 2;
        if let Some(t) = &p.title {
            let width = p.columns as u32 * col_w as u32;
            let t = fit(area, t, &font, width);
            area.draw_text(&t, &text, (PAD, y0)).map_err(err)?;
            y0 += ROW;
        }
        let labels = &p.labels;
        let more = self.entries.len() - p.shown + usize::from(self.entries.len() > p.shown);
        for (k, (e, label)) in self.entries[..p.shown].iter().zip(labels).enumerate() {
            let (col, row) = (k / p.rows, k % p.rows);
            let x = PAD + col as i32 * col_w;
            let y = y0 + row as i32 * ROW;
            if more > 0 && k + 1 == p.shown {
                let label = format!("and {more} more");
                area.draw_text(&label, &text, (x + SAMPLE + PAD, y))
                    .map_err(err)?;
                break;
            }
            let style = e.colour.stroke_width(e.width);
            if e.dashed {
                for s in (0..SAMPLE).step_by(10) {
                    area.draw(&PathElement::new(
                        vec![(x + s, y), (x + (s + 6).min(SAMPLE), y)],
                        style,
                    ))
                    .map_err(err)?;
                }
            } else {
                area.draw(&PathElement::new(vec![(x, y), (x + SAMPLE, y)], style))
                    .map_err(err)?;
            }
            if let Some(m) = e.marker {
                draw_marker(area, (x + SAMPLE / 2, y), m, 5, e.colour)?;
            }
            let label = fit(area, label, &font, p.label_w);
            area.draw_text(&label, &text, (x + SAMPLE + PAD, y))
                .map_err(err)?;
        }
        Ok(())
    }
}
