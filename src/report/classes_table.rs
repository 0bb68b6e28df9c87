//! The priority classes in `report.html`, from `classes.csv` (written when
//! the clients send priority classes): one row per class and variant with
//! the means over replicates of its requests, success rate, requests shed
//! by priority and p99 latency. Nothing for a run without classes.

use std::fmt::Write;

use super::MAX_TABLE_ROWS;
use super::chart_data::{ChartData, Table, parse_num};
use super::figure::tick;
use super::html::{escape, first_cell, more_note, num, swatch};

/// The `classes.csv` columns shown, in order: (column, header).
const COLUMNS: [(&str, &str); 5] = [
    ("share", "share of requests"),
    ("requests", "requests"),
    ("success_rate", "success rate"),
    ("shed", "shed by priority (last answer)"),
    ("latency_p99_ms", "latency p99"),
];

/// A running mean of one cell.
#[derive(Clone, Copy, Default)]
struct Mean {
    sum: f64,
    n: u32,
}

impl Mean {
    fn get(self) -> Option<f64> {
        (self.n > 0).then(|| self.sum / f64::from(self.n))
    }
}

/// `[class][variant]`: the means of [`COLUMNS`], and the classes in the
/// order the table first names them.
fn means(t: &Table, d: &ChartData) -> (Vec<String>, Vec<Vec<[Mean; 5]>>) {
    let n = d.variants.len();
    let mut classes: Vec<String> = Vec::new();
    let mut out: Vec<Vec<[Mean; 5]>> = Vec::new();
    let cols = COLUMNS.map(|(c, _)| t.col(c));
    for r in &t.rows {
        let Some(v) = d
            .index
            .get(t.text(r, "variant"))
            .copied()
            .filter(|&v| v < n)
        else {
            continue;
        };
        let class = t.text(r, "class");
        if class.is_empty() {
            continue;
        }
        let c = match classes.iter().position(|x| x == class) {
            Some(c) => c,
            None => {
                classes.push(class.to_string());
                out.push(vec![[Mean::default(); 5]; n]);
                classes.len() - 1
            }
        };
        for (m, col) in out[c][v].iter_mut().zip(cols) {
            if let Some(x) = col.and_then(|i| r.get(i)).and_then(parse_num) {
                m.sum += x;
                m.n += 1;
            }
        }
    }
    (classes, out)
}

/// Appends the section to `h` when the run has class rows.
pub fn classes_section(h: &mut String, d: &ChartData) {
    let Some(t) = d.classes.as_ref() else { return };
    let (classes, means) = means(t, d);
    if classes.is_empty() {
        return;
    }
    h.push_str("<h2 id=\"classes\">Priority classes</h2>\n<p>Means over replicates, from <code>classes.csv</code> (which has every figure, per replicate). The success rate counts the requests that ended; a request shed by priority is one whose last answer was a priority shed.</p>\n<table id=\"classes-table\">\n<tr><th>class</th><th>variant</th>");
    for (_, label) in COLUMNS {
        let _ = write!(h, "<th>{}</th>", escape(label));
    }
    h.push_str("</tr>\n");
    // Per class, the first MAX_TABLE_ROWS variants in variant order;
    // `variants` counts those with rows.
    let mut variants = 0;
    for (c, class) in classes.iter().enumerate() {
        let rows: Vec<(usize, &[Mean; 5])> = means[c]
            .iter()
            .enumerate()
            .filter(|(_, m)| m.iter().any(|x| x.n > 0))
            .collect();
        variants = variants.max(rows.len());
        let rows = &rows[..rows.len().min(MAX_TABLE_ROWS)];
        for (k, (v, m)) in rows.iter().enumerate() {
            let _ = writeln!(
                h,
                "<tr>{}<td class=\"l\">{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
                first_cell(k, rows.len(), &escape(class)),
                swatch(*v, &d.variants[*v]),
                num(m[0].get(), |x| format!("{:.0}%", x * 100.0)),
                num(m[1].get(), tick),
                num(m[2].get(), |x| format!("{:.2}%", x * 100.0)),
                num(m[3].get(), tick),
                num(m[4].get(), |x| format!("{} ms", tick(x))),
            );
        }
    }
    h.push_str("</table>\n");
    more_note(h, variants, "variants", "classes.csv");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_row_per_class_and_variant_with_means_over_replicates() {
        let summary = "variant,replicate\na,0\na,1\nb,0\n";
        let mut d = ChartData::from_bytes(b"", summary.as_bytes(), b"", None).unwrap();
        let classes = "variant,replicate,class,share,requests,succeeded,failed,shed,open_at_end,shed_attempts,success_rate,latency_p99_ms\n\
            a,0,critical,0.2,100,99,1,0,0,0,0.99,12\n\
            a,1,critical,0.2,300,297,3,0,0,0,0.97,14\n\
            a,0,background,0.8,400,200,100,100,0,150,0.5,900\n\
            a,1,background,0.8,400,200,100,100,0,150,0.5,900\n\
            b,0,critical,0.2,200,200,0,0,0,0,1,10\n\
            c,0,critical,0.2,1,1,0,0,0,0,1,10\n";
        d.classes = Some(Table::parse(classes.as_bytes()).unwrap());
        let mut h = String::new();
        classes_section(&mut h, &d);
        assert!(h.contains("<h2 id=\"classes\">"));
        // critical: a (two replicates: 200 requests, 98%) and b; the
        // unknown variant c is left out.
        assert!(
            h.contains("<td class=\"l\" rowspan=\"2\">critical</td>"),
            "{h}"
        );
        assert!(
            h.contains("<td>20%</td><td>200</td><td>98.00%</td><td>0</td><td>13 ms</td>"),
            "{h}"
        );
        assert!(
            h.contains("<td>20%</td><td>200</td><td>100.00%</td><td>0</td><td>10 ms</td>"),
            "{h}"
        );
        assert!(h.contains("<td class=\"l\">background</td>"), "{h}");
        assert_eq!(h.matches("<tr>").count(), 4, "a header and three rows");
        // No classes: nothing.
        d.classes = None;
        let mut h = String::new();
        classes_section(&mut h, &d);
        assert!(h.is_empty());
    }
}
