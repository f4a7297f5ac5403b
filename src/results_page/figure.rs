//! The page's one chart: marks (points, lines, whiskers, bars, dashed rules) on numeric axes,
//! with the legend beside the plot, drawn by plotters into an SVG string.
//!
//! Values a chart cannot place (not finite, or beyond +-[`MAX_MAGNITUDE`]) are left out by the
//! callers, which say how many in the figure's caption; spans too small for the axis ticks are
//! widened here, so no data of a file can make the drawing fail.

use plotters::element::DashedPathElement;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

/// Largest magnitude drawn: the axes' tick arithmetic stays exact far below f64's limits.
pub(super) const MAX_MAGNITUDE: f64 = 1e12;

/// A value a chart can place.
pub(super) fn drawable(v: f64) -> bool {
    v.is_finite() && v.abs() <= MAX_MAGNITUDE
}

const WIDTH: u32 = 700;
const HEIGHT: u32 = 320;
/// Room for the legend, right of the plot (plotters' text widths are estimates: leave slack).
const LEGEND: u32 = 190;
const FONT: &str = "sans-serif";

/// A colour of the page's palette (matplotlib's tab10, colour-blind friendlier than pure hues).
pub(super) fn palette(i: usize) -> RGBColor {
    const TAB10: [(u8, u8, u8); 10] = [
        (31, 119, 180),
        (255, 127, 14),
        (44, 160, 44),
        (214, 39, 40),
        (148, 103, 189),
        (140, 86, 75),
        (227, 119, 194),
        (127, 127, 127),
        (188, 189, 34),
        (23, 190, 207),
    ];
    let (r, g, b) = TAB10[i % TAB10.len()];
    RGBColor(r, g, b)
}

/// How a point is drawn.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Shape {
    /// A filled dot.
    Dot,
    /// An open ring.
    Ring,
    /// A filled triangle.
    Triangle,
}

/// Something drawn on the plot.
#[derive(Debug, Clone)]
pub(super) enum Mark {
    /// Points (x, y).
    Points {
        color: RGBColor,
        shape: Shape,
        points: Vec<(f64, f64)>,
    },
    /// A polyline through (x, y).
    Line {
        color: RGBColor,
        points: Vec<(f64, f64)>,
    },
    /// Vertical bars from lo to hi at x, with caps (min/max whiskers).
    Whiskers {
        color: RGBColor,
        spans: Vec<(f64, f64, f64)>,
    },
    /// Bars [x0, x1] x [0, height].
    Bars {
        color: RGBColor,
        bars: Vec<(f64, f64, f64)>,
    },
    /// A dashed horizontal line at y across the plot (a claim's bound, ratio 1).
    HRule { color: RGBColor, y: f64 },
    /// A dashed vertical line at x (a bound on a histogram's value axis).
    VRule { color: RGBColor, x: f64 },
}

/// A legend entry: the sample drawn and its words.
#[derive(Debug, Clone)]
pub(super) enum Key {
    /// A point of this shape.
    Point(RGBColor, Shape),
    /// A line.
    Line(RGBColor),
    /// A dashed line.
    Dashed(RGBColor),
    /// A bar.
    Bar(RGBColor),
}

/// A chart: axes, marks and legend.
#[derive(Debug, Clone, Default)]
pub(super) struct Chart {
    pub x_label: String,
    pub y_label: String,
    /// Names of the x positions 0, 1, ... for a categorical axis (none: numeric).
    pub categories: Option<Vec<String>>,
    /// A numeric x axis of whole numbers (instances, threads): ticks only at integers.
    pub x_integers: bool,
    /// Start the y axis at 0 (counts, miss rates).
    pub y_from_zero: bool,
    pub marks: Vec<Mark>,
    pub legend: Vec<(Key, String)>,
}

/// The extent of the marks' x and y values (rules count on their axis only).
fn extent(marks: &[Mark]) -> ((f64, f64), (f64, f64)) {
    let (mut xs, mut ys): (Vec<f64>, Vec<f64>) = (Vec::new(), Vec::new());
    for m in marks {
        match m {
            Mark::Points { points, .. } | Mark::Line { points, .. } => {
                xs.extend(points.iter().map(|p| p.0));
                ys.extend(points.iter().map(|p| p.1));
            }
            Mark::Whiskers { spans, .. } => {
                xs.extend(spans.iter().map(|s| s.0));
                ys.extend(spans.iter().flat_map(|s| [s.1, s.2]));
            }
            Mark::Bars { bars, .. } => {
                xs.extend(bars.iter().flat_map(|b| [b.0, b.1]));
                ys.extend(bars.iter().map(|b| b.2));
            }
            Mark::HRule { y, .. } => ys.push(*y),
            Mark::VRule { x, .. } => xs.push(*x),
        }
    }
    let span = |v: &[f64]| {
        let v: Vec<f64> = v.iter().copied().filter(|x| drawable(*x)).collect();
        let lo = v.iter().copied().fold(f64::INFINITY, f64::min);
        let hi = v.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        if v.is_empty() {
            (0.0, 1.0)
        } else {
            (lo, hi)
        }
    };
    (span(&xs), span(&ys))
}

/// `lo..hi` padded by 5 % on each side; a span of (nearly) one value is widened to 10 % of its
/// magnitude (or to 1 at 0), so a constant ratio of 1 gets the axis 0.95..1.05.
fn padded((lo, hi): (f64, f64), from_zero: bool) -> (f64, f64) {
    let (lo, hi) = if from_zero {
        (lo.min(0.0), hi.max(0.0))
    } else {
        (lo, hi)
    };
    let magnitude = lo.abs().max(hi.abs());
    let (lo, hi) = if hi - lo <= 1e-9 * magnitude.max(1e-300) {
        let half = if magnitude > 0.0 {
            0.05 * magnitude
        } else {
            0.5
        };
        ((lo + hi) / 2.0 - half, (lo + hi) / 2.0 + half)
    } else {
        (lo, hi)
    };
    let pad = 0.05 * (hi - lo);
    let lo = if from_zero && lo >= 0.0 { lo } else { lo - pad };
    (lo, hi + pad)
}

/// A tick label with as many decimals as the ticks' spacing needs (about 6 ticks per axis).
fn tick(v: f64, span: f64) -> String {
    let step = span / 6.0;
    let decimals = (-step.log10()).ceil().clamp(0.0, 8.0) as usize;
    let text = format!("{v:.decimals$}");
    if text.starts_with('-') && text[1..].chars().all(|c| c == '0' || c == '.') {
        text[1..].to_string()
    } else {
        text
    }
}

type Area<'a> = DrawingArea<SVGBackend<'a>, plotters::coord::Shift>;

/// The chart as an SVG element (a string of `<svg ...>...</svg>`).
pub(super) fn svg(chart: &Chart) -> String {
    let mut out = String::new();
    {
        let root = SVGBackend::with_string(&mut out, (WIDTH, HEIGHT)).into_drawing_area();
        // Drawing into a String has no I/O to fail; a failure would be a bug in the ranges.
        draw(&root, chart).expect("the chart's ranges are finite and non-empty");
        root.present().expect("an SVG string is always written");
    }
    out
}

fn draw(root: &Area, chart: &Chart) -> Result<(), Box<dyn std::error::Error>> {
    root.fill(&WHITE)?;
    let (plot, legend) = root.split_horizontally(WIDTH - LEGEND);
    let ((x0, x1), (y0, y1)) = extent(&chart.marks);
    let (x0, x1) = match &chart.categories {
        Some(c) => (-0.5, c.len().max(1) as f64 - 0.5),
        None => padded((x0, x1), false),
    };
    let (y0, y1) = padded((y0, y1), chart.y_from_zero);
    let mut c = ChartBuilder::on(&plot)
        .margin(12)
        .x_label_area_size(48)
        .y_label_area_size(92)
        .build_cartesian_2d(x0..x1, y0..y1)?;
    let x_format = |v: &f64| match &chart.categories {
        Some(names) if (v - v.round()).abs() < 1e-9 && *v >= 0.0 => {
            names.get(v.round() as usize).cloned().unwrap_or_default()
        }
        Some(_) => String::new(),
        None if chart.x_integers => match (v - v.round()).abs() < 1e-9 {
            true => format!("{}", v.round()),
            false => String::new(),
        },
        None => tick(*v, x1 - x0),
    };
    let y_format = |v: &f64| tick(*v, y1 - y0);
    c.configure_mesh()
        .x_desc(chart.x_label.as_str())
        .y_desc(chart.y_label.as_str())
        .x_labels(chart.categories.as_ref().map_or(7, |n| n.len().max(1)))
        .y_labels(6)
        .x_label_formatter(&x_format)
        .y_label_formatter(&y_format)
        .label_style((FONT, 17))
        .axis_desc_style((FONT, 18))
        .bold_line_style(RGBColor(225, 225, 225))
        .light_line_style(WHITE)
        .draw()?;
    for mark in &chart.marks {
        match mark {
            Mark::Points {
                color,
                shape,
                points,
            } => {
                let at = points.iter().copied();
                match shape {
                    Shape::Dot => {
                        c.draw_series(at.map(|p| Circle::new(p, 3, color.mix(0.85).filled())))?;
                    }
                    Shape::Ring => {
                        c.draw_series(at.map(|p| Circle::new(p, 3, color.stroke_width(1))))?;
                    }
                    Shape::Triangle => {
                        c.draw_series(at.map(|p| TriangleMarker::new(p, 5, color.filled())))?;
                    }
                }
            }
            Mark::Line { color, points } => {
                c.draw_series(std::iter::once(PathElement::new(
                    points.clone(),
                    color.stroke_width(2),
                )))?;
            }
            Mark::Whiskers { color, spans } => {
                // Caps a hundredth of the x range wide, lighter than the means' line.
                let cap = (x1 - x0) / 200.0;
                for &(x, lo, hi) in spans {
                    let style = color.mix(0.6).stroke_width(1);
                    c.draw_series([
                        PathElement::new(vec![(x, lo), (x, hi)], style),
                        PathElement::new(vec![(x - cap, lo), (x + cap, lo)], style),
                        PathElement::new(vec![(x - cap, hi), (x + cap, hi)], style),
                    ])?;
                }
            }
            Mark::Bars { color, bars } => {
                c.draw_series(bars.iter().map(|&(a, b, h)| {
                    Rectangle::new([(a, 0.0), (b, h)], color.mix(0.75).filled())
                }))?;
            }
            Mark::HRule { color, y } => {
                c.draw_series(std::iter::once(DashedPathElement::new(
                    vec![(x0, *y), (x1, *y)],
                    8,
                    5,
                    color.stroke_width(2),
                )))?;
            }
            Mark::VRule { color, x } => {
                c.draw_series(std::iter::once(DashedPathElement::new(
                    vec![(*x, y0), (*x, y1)],
                    8,
                    5,
                    color.stroke_width(2),
                )))?;
            }
        }
    }
    draw_legend(&legend, &chart.legend)?;
    Ok(())
}

/// The legend, one entry per line from the top of its area: a sample and its words.
fn draw_legend(area: &Area, entries: &[(Key, String)]) -> Result<(), Box<dyn std::error::Error>> {
    let text = TextStyle::from((FONT, 17).into_font()).pos(Pos::new(HPos::Left, VPos::Center));
    for (i, (key, words)) in entries.iter().enumerate() {
        let y = 22 + 25 * i as i32;
        let (x, w) = (6, 22);
        match key {
            Key::Point(color, Shape::Dot) => {
                area.draw(&Circle::new((x + w / 2, y), 4, color.filled()))?
            }
            Key::Point(color, Shape::Ring) => {
                area.draw(&Circle::new((x + w / 2, y), 4, color.stroke_width(1)))?
            }
            Key::Point(color, Shape::Triangle) => {
                area.draw(&TriangleMarker::new((x + w / 2, y), 6, color.filled()))?
            }
            Key::Line(color) => {
                area.draw(&PathElement::new(
                    vec![(x, y), (x + w, y)],
                    color.stroke_width(2),
                ))?;
                area.draw(&Circle::new((x + w / 2, y), 3, color.filled()))?;
            }
            Key::Dashed(color) => area.draw(&DashedPathElement::new(
                vec![(x, y), (x + w, y)],
                6,
                4,
                color.stroke_width(2),
            ))?,
            Key::Bar(color) => area.draw(&Rectangle::new(
                [(x + 4, y - 6), (x + w - 4, y + 6)],
                color.mix(0.75).filled(),
            ))?,
        }
        area.draw(&Text::new(words.as_str(), (x + w + 8, y), text.clone()))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ticks_have_the_decimals_their_spacing_needs() {
        // Spacing 1/6 of the span: 0.5 / 6 = 0.083 needs 2 decimals, 600 / 6 = 100 none.
        assert_eq!(tick(0.25, 0.5), "0.25");
        assert_eq!(tick(250.0, 600.0), "250");
        assert_eq!(tick(-0.0001, 0.5), "0.00");
    }

    #[test]
    fn a_constant_value_still_gets_an_axis_and_extremes_draw() {
        // A constant ratio of 1: 0.95..1.05, padded by 5 % of that.
        let (lo, hi) = padded((1.0, 1.0), false);
        assert!((lo - 0.945).abs() < 1e-12 && (hi - 1.055).abs() < 1e-12);
        // Extreme but drawable values, a single point, an empty chart: no panic, one <svg>.
        for points in [
            vec![(0.0, MAX_MAGNITUDE), (1.0, -MAX_MAGNITUDE)],
            vec![(0.0, 1e-300), (1.0, 2e-300)],
            vec![(3.0, 3.0)],
            vec![],
        ] {
            let chart = Chart {
                marks: vec![Mark::Points {
                    color: palette(0),
                    shape: Shape::Dot,
                    points,
                }],
                ..Chart::default()
            };
            assert_eq!(svg(&chart).matches("<svg").count(), 1);
        }
    }
}
