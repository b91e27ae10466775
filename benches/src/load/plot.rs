//! A small SVG of latency against load: one colour per runtime, p99 solid and p50 dashed, the
//! latency axis logarithmic. Written by hand: no plotting dependency for one chart.

use std::fmt::Write as _;

/// One runtime's points: `(load fraction, p50 µs, p99 µs)`.
#[derive(Debug, Clone)]
pub struct Series {
    /// The runtime.
    pub name: String,
    /// Its points, by increasing load.
    pub points: Vec<(f64, f64, f64)>,
}

const COLOURS: [&str; 6] = [
    "#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b",
];

/// The chart, titled `title`.
pub fn svg(title: &str, series: &[Series]) -> String {
    let (w, h) = (640.0, 400.0);
    let (left, right, top, bottom) = (70.0, 170.0, 40.0, 50.0);
    let (pw, ph) = (w - left - right, h - top - bottom);
    let values = series
        .iter()
        .flat_map(|s| s.points.iter().flat_map(|p| [p.1, p.2]))
        .filter(|v| *v > 0.0);
    let (lo, hi) = values.fold((f64::MAX, 0.0f64), |(lo, hi), v| (lo.min(v), hi.max(v)));
    let (lo, hi) = if hi <= 0.0 { (1.0, 10.0) } else { (lo, hi) };
    let (d0, d1) = (
        lo.log10().floor(),
        hi.log10().ceil().max(lo.log10().floor() + 1.0),
    );
    let x = |f: f64| left + f.clamp(0.0, 1.0) * pw;
    let y = |v: f64| top + ph - (v.max(10f64.powf(d0)).log10() - d0) / (d1 - d0) * ph;
    let mut s = String::new();
    let _ = writeln!(
        s,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" font-family="sans-serif" font-size="12">"#
    );
    let _ = writeln!(s, r#"<rect width="{w}" height="{h}" fill="white"/>"#);
    let _ = writeln!(
        s,
        r#"<text x="{}" y="22" text-anchor="middle" font-size="14">{}</text>"#,
        left + pw / 2.0,
        escape(title)
    );
    // Axes and grid.
    for i in 0..=10 {
        let f = f64::from(i) / 10.0;
        let _ = writeln!(
            s,
            r##"<line x1="{0:.1}" y1="{1:.1}" x2="{0:.1}" y2="{2:.1}" stroke="#eee"/><text x="{0:.1}" y="{3:.1}" text-anchor="middle">{4}</text>"##,
            x(f),
            top,
            top + ph,
            top + ph + 16.0,
            if i % 2 == 0 {
                format!("{f:.1}")
            } else {
                String::new()
            }
        );
    }
    let mut d = d0;
    while d <= d1 {
        let v = 10f64.powf(d);
        let label = if v >= 1_000.0 {
            format!("{} ms", v / 1_000.0)
        } else {
            format!("{v} µs")
        };
        let _ = writeln!(
            s,
            r##"<line x1="{left}" y1="{0:.1}" x2="{1:.1}" y2="{0:.1}" stroke="#ddd"/><text x="{2:.1}" y="{3:.1}" text-anchor="end">{label}</text>"##,
            y(v),
            left + pw,
            left - 6.0,
            y(v) + 4.0
        );
        d += 1.0;
    }
    let _ = writeln!(
        s,
        r#"<rect x="{left}" y="{top}" width="{pw}" height="{ph}" fill="none" stroke="black"/>"#
    );
    let _ = writeln!(
        s,
        r#"<text x="{:.1}" y="{:.1}" text-anchor="middle">offered load (fraction of tokio's closed-loop maximum)</text>"#,
        left + pw / 2.0,
        h - 12.0
    );
    let _ = writeln!(
        s,
        r#"<text transform="translate(16 {:.1}) rotate(-90)" text-anchor="middle">latency (log scale)</text>"#,
        top + ph / 2.0
    );
    // The lines and the legend.
    for (i, ser) in series.iter().enumerate() {
        let colour = COLOURS[i % COLOURS.len()];
        for (pick, dash, what) in [
            (2usize, "", "p99"),
            (1, r#" stroke-dasharray="5 4""#, "p50"),
        ] {
            let pts: Vec<String> = ser
                .points
                .iter()
                .map(|p| {
                    let v = if pick == 2 { p.2 } else { p.1 };
                    format!("{:.1},{:.1}", x(p.0), y(v))
                })
                .collect();
            let _ = writeln!(
                s,
                r#"<polyline points="{}" fill="none" stroke="{colour}" stroke-width="2"{dash}/>"#,
                pts.join(" ")
            );
            for p in &pts {
                let (cx, cy) = p.split_once(',').unwrap_or(("0", "0"));
                let _ = writeln!(s, r#"<circle cx="{cx}" cy="{cy}" r="3" fill="{colour}"/>"#);
            }
            let ly = top + 14.0 + (i * 2 + usize::from(pick == 1)) as f64 * 18.0;
            let lx = left + pw + 12.0;
            let _ = writeln!(
                s,
                r#"<line x1="{lx:.1}" y1="{ly:.1}" x2="{:.1}" y2="{ly:.1}" stroke="{colour}" stroke-width="2"{dash}/><text x="{:.1}" y="{:.1}">{} {what}</text>"#,
                lx + 24.0,
                lx + 30.0,
                ly + 4.0,
                escape(&ser.name)
            );
        }
    }
    s.push_str("</svg>\n");
    s
}

fn escape(t: &str) -> String {
    t.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_polyline_per_runtime_and_percentile() {
        let series = [
            Series {
                name: "tokio".into(),
                points: vec![(0.25, 50.0, 120.0), (0.9, 80.0, 900.0)],
            },
            Series {
                name: "a<b".into(),
                points: vec![(0.25, 40.0, 100.0)],
            },
        ];
        let svg = svg("http_hello, dedicated CPUs", &series);
        assert!(svg.starts_with("<svg") && svg.ends_with("</svg>\n"));
        assert_eq!(svg.matches("<polyline").count(), 4);
        assert!(svg.contains("a&lt;b p99"));
        assert!(!svg.contains("NaN"));
    }
}
