//! The inline SVG charts of `report.html`: each candidate's gain over the tuned local model with
//! its 95 % interval, on an axis centred at zero and scaled to the gains; and the accuracies,
//! on an axis that spans what they reach instead of starting at 0 (a 4-point gain on bars from
//! 0 to 0.9 is a sliver). Numbers are rounded to what they mean ([`significant`]).

use super::html::esc;
use std::fmt::Write as _;

/// One horizontal bar: a label, a value and its 95 % interval.
pub(super) struct Bar {
    pub(super) label: String,
    pub(super) value: f64,
    pub(super) colour: &'static str,
    pub(super) ci95: [f64; 2],
}

/// Width of the labels' column, of the plot, and the height of a row, in pixels.
const LABEL_W: f64 = 260.0;
const PLOT_W: f64 = 420.0;
const ROW_H: f64 = 22.0;

/// Colour of a gain whose interval lies above zero, below zero, or spans it.
const GAIN: &str = "#2e7d32";
const LOSS: &str = "#c62828";
const UNSURE: &str = "#9e9e9e";

/// `x` to `digits` significant digits, trailing zeros dropped: 0.0123456 → "0.0123",
/// 12.3456 → "12.3", 1.0e-7 → "1e-7". For parameters such as λ and β, whose 17 digits mean
/// nothing.
pub fn significant(x: f64, digits: usize) -> String {
    if x == 0.0 || !x.is_finite() {
        return format!("{x}");
    }
    let exponent = x.abs().log10().floor() as i32;
    if !(-3..5).contains(&exponent) {
        let s = format!("{:.*e}", digits.saturating_sub(1), x);
        let (mantissa, exp) = s.split_once('e').unwrap_or((&s, "0"));
        return format!("{}e{exp}", trim(mantissa));
    }
    let decimals = (digits as i32 - 1 - exponent).max(0) as usize;
    trim(&format!("{x:.decimals$}")).to_owned()
}

/// Drops trailing zeros after a decimal point (and the point itself).
fn trim(s: &str) -> &str {
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.')
    } else {
        s
    }
}

/// The smallest of 1, 2 or 5 × 10^k at or above `x` (x > 0).
fn nice(x: f64) -> f64 {
    let base = 10f64.powf(x.log10().floor());
    [1.0, 2.0, 5.0, 10.0]
        .into_iter()
        .map(|m| m * base)
        .find(|v| *v >= x * (1.0 - 1e-12))
        .unwrap_or(10.0 * base)
}

/// The SVG element with the chart's size and accessible name.
fn open(rows: usize, label: &str) -> String {
    format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{w}\" height=\"{h}\" role=\"img\" aria-label=\"{label}\" font-family=\"sans-serif\" font-size=\"12\">\n",
        w = LABEL_W + PLOT_W + 170.0,
        h = ROW_H * rows as f64 + 45.0
    )
}

/// The axis under `rows` rows: a line, ticks at `ticks` (value, text) and a title.
fn axis(
    svg: &mut String,
    rows: usize,
    x: impl Fn(f64) -> f64,
    ticks: &[(f64, String)],
    title: &str,
) {
    let y = ROW_H * rows as f64 + 5.0;
    let _ = writeln!(
        svg,
        "<line x1=\"{LABEL_W}\" y1=\"{y}\" x2=\"{x2}\" y2=\"{y}\" stroke=\"#444\"/>",
        x2 = LABEL_W + PLOT_W
    );
    for (v, text) in ticks {
        let _ = writeln!(
            svg,
            "<line x1=\"{tx:.1}\" y1=\"{y}\" x2=\"{tx:.1}\" y2=\"{t}\" stroke=\"#444\"/><text x=\"{tx:.1}\" y=\"{ty}\" text-anchor=\"middle\">{text}</text>",
            tx = x(*v),
            t = y + 4.0,
            ty = y + 16.0
        );
    }
    let _ = writeln!(
        svg,
        "<text x=\"{cx}\" y=\"{ty}\" text-anchor=\"middle\">{title}</text></svg>",
        cx = LABEL_W + PLOT_W / 2.0,
        ty = y + 34.0
    );
}

/// Row `i`: its label, a bar over `span` (pixels), a whisker over `whisker` and `value` at the
/// right.
fn row(
    svg: &mut String,
    i: usize,
    label: &str,
    span: [f64; 2],
    whisker: [f64; 2],
    colour: &str,
    value: &str,
) {
    let y = ROW_H * i as f64 + 5.0;
    let _ = writeln!(
        svg,
        "<text x=\"{lx}\" y=\"{ty}\" text-anchor=\"end\">{label}</text><rect x=\"{a:.1}\" y=\"{y}\" width=\"{w:.1}\" height=\"{bh}\" fill=\"{colour}\"/><line x1=\"{x_lo:.1}\" y1=\"{my}\" x2=\"{x_hi:.1}\" y2=\"{my}\" stroke=\"#222\"/><text x=\"{vx:.1}\" y=\"{ty}\">{value}</text>",
        lx = LABEL_W - 6.0,
        ty = y + 13.0,
        my = y + (ROW_H - 6.0) / 2.0,
        bh = ROW_H - 6.0,
        a = span[0],
        w = (span[1] - span[0]).max(1.0),
        x_lo = whisker[0],
        x_hi = whisker[1],
        vx = LABEL_W + PLOT_W + 6.0,
        label = esc(label),
    );
}

/// Gains in accuracy points with their 95 % intervals, on an axis symmetric about zero and
/// scaled to the largest end of an interval (at least ±1 point), the zero line drawn through
/// every row; a bar is green when its interval lies above zero, red below, grey across it.
pub(super) fn gains_chart(bars: &[Bar]) -> String {
    let reach = bars
        .iter()
        .flat_map(|b| [b.value, b.ci95[0], b.ci95[1]])
        .filter(|v| v.is_finite())
        .fold(1.0_f64, |m, v| m.max(v.abs()));
    let half = nice(reach);
    let x = |v: f64| LABEL_W + PLOT_W * (0.5 + v.clamp(-half, half) / (2.0 * half));
    let mut svg = open(bars.len(), "gain over the tuned local model, in points");
    for (i, bar) in bars.iter().enumerate() {
        let [lo, hi] = bar.ci95;
        let colour = if lo > 0.0 {
            GAIN
        } else if hi < 0.0 {
            LOSS
        } else {
            UNSURE
        };
        let (a, b) = (x(0.0).min(x(bar.value)), x(0.0).max(x(bar.value)));
        let value = format!("{:+.1} [{lo:+.1}, {hi:+.1}]", bar.value);
        row(
            &mut svg,
            i,
            &bar.label,
            [a, b],
            [x(lo), x(hi)],
            colour,
            &value,
        );
    }
    let bottom = ROW_H * bars.len() as f64 + 5.0;
    let _ = writeln!(
        svg,
        "<line x1=\"{z:.1}\" y1=\"0\" x2=\"{z:.1}\" y2=\"{bottom}\" stroke=\"#000\" stroke-width=\"1.5\"/>",
        z = x(0.0)
    );
    let ticks: Vec<(f64, String)> = [-1.0, -0.5, 0.0, 0.5, 1.0]
        .iter()
        .map(|f| f * half)
        .map(|v| {
            (
                v,
                if v > 0.0 {
                    format!("+{}", significant(v, 2))
                } else {
                    significant(v, 2)
                },
            )
        })
        .collect();
    axis(
        &mut svg,
        bars.len(),
        x,
        &ticks,
        "gain over the tuned local model (accuracy points)",
    );
    svg
}

/// Accuracies with their 95 % intervals, on an axis from a round value below the lowest end
/// of an interval to one above the highest (0.05 steps, at least 0.1 wide), which the caller
/// names; bars start at the axis' left end.
pub(super) fn accuracy_chart(bars: &[Bar]) -> (String, f64) {
    let low = bars
        .iter()
        .map(|b| b.ci95[0].min(b.value))
        .fold(1.0_f64, f64::min);
    let high = bars
        .iter()
        .map(|b| b.ci95[1].max(b.value))
        .fold(0.0_f64, f64::max);
    let from = ((low * 20.0).floor() / 20.0).clamp(0.0, 0.9);
    let to = ((high * 20.0).ceil() / 20.0).clamp(from + 0.1, 1.0);
    let from = from.min(to - 0.1);
    let x = |v: f64| LABEL_W + PLOT_W * ((v.clamp(from, to) - from) / (to - from));
    let mut svg = open(bars.len(), "accuracy per learner");
    for (i, bar) in bars.iter().enumerate() {
        let [lo, hi] = bar.ci95;
        let span = [LABEL_W, x(bar.value)];
        let value = format!("{:.3}", bar.value);
        row(
            &mut svg,
            i,
            &bar.label,
            span,
            [x(lo), x(hi)],
            bar.colour,
            &value,
        );
    }
    let ticks: Vec<(f64, String)> = (0..=4)
        .map(|k| from + (to - from) * f64::from(k) / 4.0)
        .map(|v| (v, significant(v, 3)))
        .collect();
    axis(&mut svg, bars.len(), x, &ticks, "accuracy");
    (svg, from)
}
