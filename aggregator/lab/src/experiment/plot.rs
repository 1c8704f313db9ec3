//! Line charts with error bars, drawn with `plotters` into SVG text and PNG bytes.
//!
//! Text is rendered with DejaVu Sans, compiled into the binary (`assets/fonts/`, Bitstream Vera
//! licence beside it) and registered with plotters' `ab_glyph` backend, so no system font,
//! fontconfig or image library is needed. The SVG output names the font family
//! (`sans-serif`) and leaves glyph rendering to the viewer. PNGs are encoded with the `png`
//! crate from the RGB buffer, so the same figure gives the same bytes.

use plotters::coord::Shift;
use plotters::coord::types::RangedCoordf64;
use plotters::prelude::*;
use std::sync::OnceLock;

/// The embedded font (DejaVu Sans 2.37).
const FONT: &[u8] = include_bytes!("../../../assets/fonts/DejaVuSans.ttf");
/// The family name figures ask for.
const FAMILY: &str = "sans-serif";

/// Why a figure could not be drawn.
#[derive(Debug, thiserror::Error)]
pub enum PlotError {
    /// The embedded font could not be parsed.
    #[error("the embedded DejaVu Sans font is invalid")]
    Font,
    /// plotters failed while drawing.
    #[error("drawing {figure}: {message}")]
    Draw {
        /// The figure's title.
        figure: String,
        /// plotters' message.
        message: String,
    },
    /// PNG encoding failed.
    #[error("encoding {figure} as PNG: {message}")]
    Png {
        /// The figure's title.
        figure: String,
        /// The encoder's message.
        message: String,
    },
}

fn register_font() -> Result<(), PlotError> {
    static DONE: OnceLock<bool> = OnceLock::new();
    let ok = *DONE
        .get_or_init(|| plotters::style::register_font(FAMILY, FontStyle::Normal, FONT).is_ok());
    if ok { Ok(()) } else { Err(PlotError::Font) }
}

/// How a series is drawn.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Mark {
    /// Markers at (x, mean) joined by a line, with ±sd error bars.
    Points(Shape),
    /// A horizontal reference line at the first point's mean, dashed with this pattern.
    Level(Line),
}

/// Marker shapes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shape {
    /// Filled circle.
    Circle,
    /// Filled square.
    Square,
    /// Filled triangle.
    Triangle,
    /// Hollow circle.
    Ring,
}

/// Line patterns of reference lines.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Line {
    /// Long dashes.
    Dashed,
    /// Dash-dot (drawn as short dashes with wide gaps).
    DashDot,
    /// Dots.
    Dotted,
}

/// One series: points (x, mean, sd) and its look.
#[derive(Debug, Clone)]
pub struct Series {
    /// Legend text.
    pub name: String,
    /// (x, mean, sd); sd 0 draws no bar.
    pub points: Vec<(f64, f64, f64)>,
    /// How it is drawn.
    pub mark: Mark,
    /// Colour (RGB).
    pub colour: (u8, u8, u8),
}

/// One chart.
#[derive(Debug, Clone)]
pub struct Panel {
    /// Title above the chart.
    pub title: String,
    /// x-axis label.
    pub x_label: String,
    /// y-axis label.
    pub y_label: String,
    /// x range.
    pub x_range: (f64, f64),
    /// y range.
    pub y_range: (f64, f64),
    /// The series, drawn in order.
    pub series: Vec<Series>,
    /// Horizontal offset between marker series, as a fraction of the x range, so that error
    /// bars at the same x stay apart.
    pub dodge: f64,
}

/// A figure: panels side by side.
#[derive(Debug, Clone)]
pub struct Figure {
    /// Used in error messages.
    pub name: String,
    /// The panels, left to right.
    pub panels: Vec<Panel>,
    /// Width of one panel in pixels.
    pub panel_width: u32,
    /// Height in pixels.
    pub height: u32,
}

/// A colour-blind-friendly palette (Okabe–Ito, then greys).
pub const PALETTE: [(u8, u8, u8); 8] = [
    (0, 114, 178),
    (213, 94, 0),
    (0, 158, 115),
    (204, 121, 167),
    (230, 159, 0),
    (86, 180, 233),
    (0, 0, 0),
    (120, 120, 120),
];

impl Figure {
    fn size(&self) -> (u32, u32) {
        (
            self.panel_width * self.panels.len().max(1) as u32,
            self.height,
        )
    }

    /// The figure as SVG text.
    pub fn svg(&self) -> Result<String, PlotError> {
        register_font()?;
        let mut out = String::new();
        {
            let root = SVGBackend::with_string(&mut out, self.size()).into_drawing_area();
            self.draw(&root)?;
        }
        Ok(out)
    }

    /// The figure as PNG bytes.
    pub fn png(&self) -> Result<Vec<u8>, PlotError> {
        register_font()?;
        let (w, h) = self.size();
        let mut rgb = vec![0u8; (w * h * 3) as usize];
        {
            let root = BitMapBackend::with_buffer(&mut rgb, (w, h)).into_drawing_area();
            self.draw(&root)?;
        }
        let png_err = |e: png::EncodingError| PlotError::Png {
            figure: self.name.clone(),
            message: e.to_string(),
        };
        let mut bytes = Vec::new();
        {
            let mut enc = png::Encoder::new(&mut bytes, w, h);
            enc.set_color(png::ColorType::Rgb);
            enc.set_depth(png::BitDepth::Eight);
            enc.set_compression(png::Compression::Best);
            enc.set_filter(png::FilterType::Paeth);
            enc.set_adaptive_filter(png::AdaptiveFilterType::Adaptive);
            let mut writer = enc.write_header().map_err(png_err)?;
            writer.write_image_data(&rgb).map_err(png_err)?;
            writer.finish().map_err(png_err)?;
        }
        Ok(bytes)
    }

    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> Result<(), PlotError> {
        let err = |e: &dyn std::fmt::Display| PlotError::Draw {
            figure: self.name.clone(),
            message: e.to_string(),
        };
        root.fill(&WHITE).map_err(|e| err(&e))?;
        let areas = root.split_evenly((1, self.panels.len().max(1)));
        for (panel, area) in self.panels.iter().zip(areas.iter()) {
            draw_panel(panel, area).map_err(|e| err(&e))?;
        }
        root.present().map_err(|e| err(&e))?;
        Ok(())
    }
}

type DrawResult<DB> = Result<(), DrawingAreaErrorKind<<DB as DrawingBackend>::ErrorType>>;

/// A panel's chart: ε (or another f64) against accuracy.
type Chart<'a, DB> = ChartContext<'a, DB, Cartesian2d<RangedCoordf64, RangedCoordf64>>;

/// Draws one panel: axes and grid, every series in order, then the legend.
fn draw_panel<DB: DrawingBackend>(panel: &Panel, area: &DrawingArea<DB, Shift>) -> DrawResult<DB> {
    let mut chart = axes(panel, area)?;
    // Spread overlapping markers of different series a little along x so error bars stay apart.
    let marked: Vec<usize> = panel
        .series
        .iter()
        .enumerate()
        .filter(|(_, s)| matches!(s.mark, Mark::Points(_)))
        .map(|(i, _)| i)
        .collect();
    let (x0, x1) = panel.x_range;
    let dodge_step = (x1 - x0) * panel.dodge;
    for (i, s) in panel.series.iter().enumerate() {
        match s.mark {
            Mark::Level(pattern) => draw_level(&mut chart, panel, s, pattern)?,
            Mark::Points(shape) => {
                let k = marked.iter().position(|&m| m == i).unwrap_or(0) as f64;
                let dodge = (k - (marked.len() as f64 - 1.0) / 2.0) * dodge_step;
                draw_points(&mut chart, panel, s, shape, dodge)?;
            }
        }
    }
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::LowerRight)
        .background_style(WHITE.mix(0.85))
        .border_style(RGBColor(160, 160, 160))
        .label_font((FAMILY, 13))
        .draw()?;
    Ok(())
}

/// The panel's chart with its caption, axes, labels and grid drawn.
fn axes<'a, DB: DrawingBackend>(
    panel: &Panel,
    area: &DrawingArea<DB, Shift>,
) -> Result<Chart<'a, DB>, DrawingAreaErrorKind<DB::ErrorType>> {
    let (x0, x1) = panel.x_range;
    let (y0, y1) = panel.y_range;
    let mut chart = ChartBuilder::on(area)
        .caption(&panel.title, (FAMILY, 20))
        .margin(12)
        .x_label_area_size(46)
        .y_label_area_size(58)
        .build_cartesian_2d(x0..x1, y0..y1)?;
    chart
        .configure_mesh()
        .x_desc(&panel.x_label)
        .y_desc(&panel.y_label)
        .label_style((FAMILY, 14))
        .axis_desc_style((FAMILY, 16))
        .light_line_style(RGBColor(235, 235, 235))
        .bold_line_style(RGBColor(215, 215, 215))
        .x_labels(12)
        .y_labels(11)
        .y_label_formatter(&|y| format!("{y:.1}"))
        .draw()?;
    Ok(chart)
}

fn rgb(s: &Series) -> RGBColor {
    RGBColor(s.colour.0, s.colour.1, s.colour.2)
}

/// A horizontal reference line across the panel at the series' first mean, with its legend.
fn draw_level<'a, DB: DrawingBackend + 'a>(
    chart: &mut Chart<'a, DB>,
    panel: &Panel,
    s: &Series,
    pattern: Line,
) -> DrawResult<DB> {
    let Some(&(_, y, _)) = s.points.first() else {
        return Ok(());
    };
    let (x0, x1) = panel.x_range;
    let line = rgb(s).stroke_width(2);
    let pts = vec![(x0, y), (x1, y)];
    let anno = match pattern {
        Line::Dashed => chart.draw_series(DashedLineSeries::new(pts, 12, 6, line))?,
        Line::DashDot => {
            chart.draw_series(DashedLineSeries::new(pts, 14, 4, line))?;
            chart.draw_series(DashedLineSeries::new(
                vec![(x0 + (x1 - x0) * 0.004, y), (x1, y)],
                2,
                16,
                line,
            ))?
        }
        Line::Dotted => chart.draw_series(DashedLineSeries::new(pts, 2, 5, line))?,
    };
    // The legend's sample in the line's pattern: four segments (repeats are harmless).
    let p: [(i32, i32); 4] = match pattern {
        Line::Dashed => [(-14, -4), (2, 12), (2, 12), (2, 12)],
        Line::DashDot => [(-14, -4), (0, 2), (6, 14), (6, 14)],
        Line::Dotted => [(-13, -11), (-6, -4), (1, 3), (8, 10)],
    };
    let seg = move |(a, b): (i32, i32)| PathElement::new(vec![(a, 0), (b, 0)], line);
    anno.label(&s.name).legend(move |(x, y)| {
        EmptyElement::at((x, y)) + seg(p[0]) + seg(p[1]) + seg(p[2]) + seg(p[3])
    });
    Ok(())
}

/// Markers at (x + `dodge`, mean) joined by a line, with ±sd error bars clipped to the y range.
fn draw_points<'a, DB: DrawingBackend + 'a>(
    chart: &mut Chart<'a, DB>,
    panel: &Panel,
    s: &Series,
    shape: Shape,
    dodge: f64,
) -> DrawResult<DB> {
    let (y0, y1) = panel.y_range;
    let colour = rgb(s);
    let pts: Vec<(f64, f64, f64)> = s
        .points
        .iter()
        .map(|&(x, m, sd)| (x + dodge, m, sd))
        .collect();
    chart.draw_series(LineSeries::new(
        pts.iter().map(|&(x, m, _)| (x, m)),
        colour.stroke_width(1),
    ))?;
    chart.draw_series(pts.iter().filter(|p| p.2 > 0.0).map(|&(x, m, sd)| {
        ErrorBar::new_vertical(
            x,
            (m - sd).max(y0),
            m,
            (m + sd).min(y1),
            colour.stroke_width(1),
            8,
        )
    }))?;
    // One arm per shape: plotters' legend closures need concrete element types.
    let fill = colour.filled();
    let ring = colour.stroke_width(2);
    macro_rules! markers {
        ($at:ident => $e:expr) => {{
            chart
                .draw_series(pts.iter().map(|&(x, m, _)| {
                    let $at = (x, m);
                    $e
                }))?
                .label(&s.name)
                .legend(move |(x, y)| {
                    let $at = (x, y);
                    $e
                });
        }};
    }
    match shape {
        Shape::Circle => markers!(at => Circle::new(at, 5, fill)),
        Shape::Ring => markers!(at => Circle::new(at, 5, ring)),
        Shape::Square => markers!(at => EmptyElement::at(at)
            + Rectangle::new([(-4, -4), (4, 4)], fill)),
        Shape::Triangle => markers!(at => EmptyElement::at(at)
            + Polygon::new(vec![(0, -6), (5, 4), (-5, 4)], fill)),
    }
    Ok(())
}
