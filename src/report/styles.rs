//! The style of the i-th series of a chart: a colour from a palette made
//! for colour-blind readers (Paul Tol's "muted" qualitative scheme, SRON
//! technical note SRON/EPS/TN/09-002, 2021: nine colours told apart under
//! the common colour-vision deficiencies) and a marker shape. Colours and
//! shapes cycle together, the colour by the series' index modulo nine and
//! the shape modulo five: nine and five are coprime, so the first 45
//! series all differ in colour-and-shape (the Chinese remainder theorem),
//! and neighbours differ in both.

use plotters::coord::CoordTranslate;
use plotters::prelude::*;

use super::figure::err;

/// The palette, in the order series take it.
pub const PALETTE: [RGBColor; 9] = [
    RGBColor(0x33, 0x22, 0x88), // indigo
    RGBColor(0xCC, 0x66, 0x77), // rose
    RGBColor(0x11, 0x77, 0x33), // green
    RGBColor(0x88, 0xCC, 0xEE), // cyan
    RGBColor(0x88, 0x22, 0x55), // wine
    RGBColor(0x44, 0xAA, 0x99), // teal
    RGBColor(0xDD, 0xCC, 0x77), // sand
    RGBColor(0xAA, 0x44, 0x99), // purple
    RGBColor(0x99, 0x99, 0x33), // olive
];

/// A marker's shape.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Marker {
    #[default]
    Circle,
    Square,
    TriangleUp,
    Diamond,
    TriangleDown,
}

/// The shapes, in the order series take them.
pub const MARKERS: [Marker; 5] = [
    Marker::Circle,
    Marker::Square,
    Marker::TriangleUp,
    Marker::Diamond,
    Marker::TriangleDown,
];

/// How many series get a style of their own before styles repeat.
pub const DISTINCT_STYLES: usize = PALETTE.len() * MARKERS.len();

/// The colour of the i-th series (the same in every chart and in the
/// report's swatches).
pub fn colour(i: usize) -> RGBColor {
    PALETTE[i % PALETTE.len()]
}

/// The marker of the i-th series.
pub fn marker(i: usize) -> Marker {
    MARKERS[i % MARKERS.len()]
}

impl Marker {
    /// The corners of the shape around (0, 0), `r` pixels in radius (none
    /// for a circle).
    fn corners(self, r: i32) -> Vec<(i32, i32)> {
        let h = r * 7 / 8;
        match self {
            Marker::Circle => Vec::new(),
            Marker::Square => vec![(-h, -h), (h, -h), (h, h), (-h, h)],
            Marker::TriangleUp => vec![(0, -r - 1), (r, r * 3 / 4), (-r, r * 3 / 4)],
            Marker::TriangleDown => vec![(0, r + 1), (r, -r * 3 / 4), (-r, -r * 3 / 4)],
            Marker::Diamond => vec![(0, -r - 1), (r, 0), (0, r + 1), (-r, 0)],
        }
    }
}

/// Draws a filled marker `r` pixels in radius centred on `at` (in the
/// area's coordinates).
pub fn draw_marker<DB, CT>(
    area: &DrawingArea<DB, CT>,
    at: CT::From,
    m: Marker,
    r: i32,
    c: RGBColor,
) -> Result<(), String>
where
    DB: DrawingBackend,
    CT: CoordTranslate,
    CT::From: Clone,
{
    if m == Marker::Circle {
        area.draw(&(EmptyElement::at(at) + Circle::new((0, 0), r, c.filled())))
            .map_err(err)
    } else {
        area.draw(&(EmptyElement::at(at) + Polygon::new(m.corners(r), c.filled())))
            .map_err(err)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    #[test]
    fn the_first_styles_are_all_different() {
        let styles: HashSet<(RGBColor, Marker)> = (0..DISTINCT_STYLES)
            .map(|i| (colour(i), marker(i)))
            .collect();
        assert_eq!(styles.len(), DISTINCT_STYLES);
        const { assert!(DISTINCT_STYLES >= 30) };
        assert_eq!(
            (colour(DISTINCT_STYLES), marker(DISTINCT_STYLES)),
            (colour(0), marker(0))
        );
    }
}
