//! Capacity drawn on a load chart (the `load` chart's dependency, each
//! panel of `services`): a dashed horizontal line when it stays what it
//! is, or a dashed step line, bucket by bucket, when it changes (an
//! autoscaler adding replicas, an incident taking capacity away, an
//! adaptive limit: `super::capacity_series`). One black line when every
//! variant has the same; otherwise one per variant, in its colour.

use plotters::style::{BLACK, RGBColor};

use super::chart_data::Point;
use super::figure::{Figure, HLine, Line, colour, tick};
use super::styles::marker;

/// One variant's capacity.
#[derive(Clone, Debug, PartialEq)]
pub enum Capacity {
    /// Nominal, the same in every bucket (per second).
    Flat(f64),
    /// Per bucket (mean over replicates), one point per bucket start.
    Buckets(Vec<Point>),
}

/// How the capacity was drawn: what a title says of it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Drawn {
    /// No variant has a capacity.
    Nothing,
    /// One flat line every variant shares (per second).
    Flat(f64),
    /// A flat line per variant.
    FlatPerVariant,
    /// One step line every variant shares.
    Changing,
    /// A line per variant, at least one of them changing.
    ChangingPerVariant,
}

/// Each point held across its bucket: the points doubled, each copy at
/// the next point's time (or `width` on, past a gap or at the end), so
/// the line steps where the capacity changes.
pub fn steps(points: &[Point], width: f64) -> Vec<Point> {
    let mut out = Vec::with_capacity(points.len() * 2);
    for (i, p) in points.iter().enumerate() {
        out.push(*p);
        let end = points
            .get(i + 1)
            .map(|q| q.t)
            .filter(|&t| t - p.t <= width * 1.5)
            .unwrap_or(p.t + width);
        out.push(Point { t: end, ..*p });
    }
    out
}

fn same(a: &Capacity, b: &Capacity) -> bool {
    match (a, b) {
        (Capacity::Flat(x), Capacity::Flat(y)) => (x - y).abs() < 1e-9,
        (Capacity::Buckets(x), Capacity::Buckets(y)) => {
            x.len() == y.len()
                && x.iter()
                    .zip(y)
                    .all(|(p, q)| p.t == q.t && (p.mean - q.mean).abs() < 1e-9)
        }
        _ => false,
    }
}

/// A series of buckets that never changes is a flat line.
fn settle(c: Capacity) -> Capacity {
    match c {
        Capacity::Buckets(p)
            if !p.is_empty() && p.iter().all(|q| (q.mean - p[0].mean).abs() < 1e-9) =>
        {
            Capacity::Flat(p[0].mean)
        }
        other => other,
    }
}

/// Draws the capacity of each variant (`(variant index, capacity)`) on
/// `f`: `width` is the width of a point's bucket (s), `names` the variants'
/// names (for the labels of flat lines per variant), `labelled` whether the
/// lines go into the figure's legend (a panel of small multiples has
/// none).
pub fn draw(
    f: &mut Figure,
    caps: Vec<(usize, Capacity)>,
    width: f64,
    names: &[String],
    labelled: bool,
) -> Drawn {
    let caps: Vec<(usize, Capacity)> = caps
        .into_iter()
        .map(|(v, c)| (v, settle(c)))
        .filter(|(_, c)| match c {
            Capacity::Flat(c) => *c > 0.0,
            Capacity::Buckets(p) => !p.is_empty(),
        })
        .collect();
    let Some((_, first)) = caps.first() else {
        return Drawn::Nothing;
    };
    let all_same = caps.iter().all(|(_, c)| same(c, first));
    let changing = caps.iter().any(|(_, c)| matches!(c, Capacity::Buckets(_)));
    let label = |s: String| if labelled { s } else { String::new() };
    if !changing {
        if all_same {
            let Capacity::Flat(c) = *first else {
                return Drawn::Nothing;
            };
            f.hlines.push(HLine {
                y: c,
                label: label(format!("capacity ({}/s)", tick(c))),
                colour: BLACK,
            });
            return Drawn::Flat(c);
        }
        for (v, c) in &caps {
            if let Capacity::Flat(c) = *c {
                let name = names.get(*v).map_or("", String::as_str);
                f.hlines.push(HLine {
                    y: c,
                    label: label(format!("capacity {name} ({}/s)", tick(c))),
                    colour: colour(*v),
                });
            }
        }
        return Drawn::FlatPerVariant;
    }
    // Changing: steps, one black line or one per variant.
    let t_end = f.x_range.map_or(0.0, |(_, b)| b);
    let line = |c: &Capacity, colour: RGBColor, v: usize, label: String| Line {
        label,
        colour,
        points: match c {
            Capacity::Flat(y) => vec![
                Point {
                    t: 0.0,
                    mean: *y,
                    min: *y,
                    max: *y,
                },
                Point {
                    t: t_end,
                    mean: *y,
                    min: *y,
                    max: *y,
                },
            ],
            Capacity::Buckets(p) => steps(p, width),
        },
        band: false,
        dashed: true,
        marker: marker(v),
    };
    if all_same {
        f.lines
            .push(line(first, BLACK, 0, label("capacity per bucket".into())));
        return Drawn::Changing;
    }
    if labelled {
        // One legend entry for them all: a line with no points.
        f.lines.push(Line {
            label: "capacity (dashed, in the variants' colours)".into(),
            colour: RGBColor(90, 90, 90),
            points: Vec::new(),
            band: false,
            dashed: true,
            marker: Default::default(),
        });
    }
    for (v, c) in &caps {
        f.lines.push(line(c, colour(*v), *v, String::new()));
    }
    Drawn::ChangingPerVariant
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(t: f64, mean: f64) -> Point {
        Point {
            t,
            mean,
            min: mean,
            max: mean,
        }
    }

    #[test]
    fn steps_hold_each_bucket_and_break_at_gaps() {
        let s = steps(&[p(0.0, 1.0), p(5.0, 2.0), p(20.0, 3.0)], 5.0);
        let ts: Vec<(f64, f64)> = s.iter().map(|q| (q.t, q.mean)).collect();
        assert_eq!(
            ts,
            [
                (0.0, 1.0),
                (5.0, 1.0),
                (5.0, 2.0),
                (10.0, 2.0),
                (20.0, 3.0),
                (25.0, 3.0)
            ]
        );
    }

    #[test]
    fn flat_capacities_stay_horizontal_lines_and_changing_ones_step() {
        let names = vec!["a".to_string(), "b".to_string()];
        let mut f = Figure::default();
        // A series that never changes is the flat line it always was.
        let flat = Capacity::Buckets(vec![p(0.0, 100.0), p(5.0, 100.0)]);
        let d = draw(
            &mut f,
            vec![(0, flat), (1, Capacity::Flat(100.0))],
            5.0,
            &names,
            true,
        );
        assert_eq!(d, Drawn::Flat(100.0));
        assert_eq!(f.hlines.len(), 1);
        assert_eq!(f.hlines[0].label, "capacity (100/s)");
        assert!(f.lines.is_empty());

        let mut f = Figure {
            x_range: Some((0.0, 10.0)),
            ..Figure::default()
        };
        let up = Capacity::Buckets(vec![p(0.0, 100.0), p(5.0, 200.0)]);
        let d = draw(
            &mut f,
            vec![(0, up.clone()), (1, up.clone())],
            5.0,
            &names,
            true,
        );
        assert_eq!(d, Drawn::Changing);
        assert!(f.hlines.is_empty());
        assert_eq!(f.lines.len(), 1);
        assert_eq!(f.lines[0].label, "capacity per bucket");
        assert_eq!(f.lines[0].points.len(), 4);
        assert!(f.lines[0].dashed && f.lines[0].colour == BLACK);

        let mut f = Figure {
            x_range: Some((0.0, 10.0)),
            ..Figure::default()
        };
        let d = draw(
            &mut f,
            vec![(0, up), (1, Capacity::Flat(150.0))],
            5.0,
            &names,
            true,
        );
        assert_eq!(d, Drawn::ChangingPerVariant);
        // The legend entry, then a line per variant in its colour.
        assert_eq!(f.lines.len(), 3);
        assert!(f.lines[0].points.is_empty() && !f.lines[0].label.is_empty());
        assert_eq!(f.lines[1].colour, colour(0));
        assert_eq!(f.lines[2].colour, colour(1));
        assert_eq!(
            f.lines[2].points.iter().map(|q| q.t).collect::<Vec<_>>(),
            [0.0, 10.0]
        );
        // Nothing to draw.
        let mut f = Figure::default();
        assert_eq!(
            draw(&mut f, vec![(0, Capacity::Flat(0.0))], 5.0, &names, true),
            Drawn::Nothing
        );
    }
}
