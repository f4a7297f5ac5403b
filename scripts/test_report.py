"""`moe-opt report` pages rendered headless, as a reader's PDF viewer would: WeasyPrint (pinned in
requirements-notebooks.txt) lays out the page of a short verify run, of a small sweep and of an
mrc table and prints it to PDF, pypdfium2 turns the first pages into PNG to look at. Run by
`./dev test` (after the notebooks, in their venv):

    python scripts/test_report.py [--moe-opt target/debug/moe-opt] [--png-dir out/report-pages]

Checks per page: WeasyPrint logs no warning or error (an unsupported construct, a broken SVG); the
laid-out document holds one SVG image per figure the CSVs call for (verify: a claim with a ratio
on some instance of instances.csv; sweep: per axis of results.csv, the objective and the ratio;
mrc: one), each with a width; the PDF's text has every claim id (verify) or method (sweep); the
PNG of each of the first pages is not blank. The PNGs stay in --png-dir. Prints `N passed, N
failed` and exits 1 on any failure.
"""

import argparse
import csv
import logging
import os
import sys
import tempfile

import pypdfium2
import weasyprint
from weasyprint.formatting_structure import boxes

from moe_cli import run

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PAGES_TO_PNG = 3


def rows(path):
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def expected_verify(folder):
    """Figures and words of a verify folder's page, from its CSVs."""
    with_ratio = {r["claim"] for r in rows(os.path.join(folder, "instances.csv")) if r["ratio"]}
    ids = [r["id"] for r in rows(os.path.join(folder, "claims.csv"))]
    return len(with_ratio), ids


def expected_sweep(folder):
    path = os.path.join(folder, "results.csv")
    with open(path, newline="") as f:
        header = next(csv.reader(f))
    axes = header[2:header.index("instance_sha256")]
    table = rows(path)
    quantities = sum(any(r[q] for r in table) for q in ("objective", "ratio"))
    methods = sorted({r["method"] for r in table})
    return len(axes) * quantities, methods


def svg_boxes(document):
    """The laid-out SVG images of a rendered document, over all its pages."""
    found = []

    def walk(box):
        if isinstance(box, boxes.ReplacedBox) and type(box.replacement).__name__ == "SVGImage":
            found.append(box)
        for child in getattr(box, "all_children", lambda: [])():
            walk(child)

    for page in document.pages:
        walk(page._page_box)
    return found


class Messages(logging.Handler):
    """WeasyPrint's warnings and errors while it renders."""

    def __init__(self):
        super().__init__(logging.WARNING)
        self.records = []

    def emit(self, record):
        self.records.append(self.format(record))


def check_page(name, html_path, figures, words, png_dir):
    """Renders one page; returns the failed checks (empty when all hold)."""
    failures = []
    messages = Messages()
    logger = logging.getLogger("weasyprint")
    logger.addHandler(messages)
    try:
        document = weasyprint.HTML(filename=html_path).render()
    finally:
        logger.removeHandler(messages)
    if messages.records:
        failures.append(f"WeasyPrint said: {messages.records[:3]}")
    with open(html_path) as f:
        in_html = f.read().count("<svg")
    laid_out = svg_boxes(document)
    if not (len(laid_out) == in_html == figures):
        failures.append(f"{figures} figures expected, {in_html} in the HTML, {len(laid_out)} laid out")
    if any(not (b.width and b.width > 100) for b in laid_out):
        failures.append("a figure laid out without its width")
    pdf_path = os.path.join(png_dir, f"{name}.pdf")
    document.write_pdf(pdf_path)
    pdf = pypdfium2.PdfDocument(pdf_path)
    text = "".join("".join(pdf[i].get_textpage().get_text_range().split()) for i in range(len(pdf)))
    missing = [w for w in words if "".join(w.split()) not in text]
    if missing:
        failures.append(f"not in the PDF's text: {missing[:5]}")
    for i in range(min(PAGES_TO_PNG, len(pdf))):
        image = pdf[i].render(scale=1.3).to_pil()
        image.save(os.path.join(png_dir, f"{name}-{i + 1}.png"))
        lo, hi = image.convert("L").getextrema()
        if lo == hi:
            failures.append(f"page {i + 1} is blank")
    print(f"{'ok  ' if not failures else 'FAIL'} {name}: {len(pdf)} pages, {len(laid_out)} figures"
          + "".join(f"\n     {f}" for f in failures))
    return failures


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--moe-opt", default=os.path.join(ROOT, "target", "debug", "moe-opt"))
    parser.add_argument("--png-dir", default=os.path.join(ROOT, "out", "report-pages"))
    args = parser.parse_args()
    moe_opt = args.moe_opt
    os.makedirs(args.png_dir, exist_ok=True)
    passed = failed = 0
    with tempfile.TemporaryDirectory(prefix="moe-opt-report-") as tmp:
        verify = os.path.join(tmp, "verify")
        run(moe_opt, "verify", "--instances", "3", "--search", "20", "--restarts", "1",
            "--jobs", "1", "--out", verify)
        sweep = os.path.join(tmp, "sweep")
        run(moe_opt, "sweep", os.path.join(ROOT, "instances", "sweeps", "zipmoe-ratio-small.toml"),
            "--jobs", "1", "--out", sweep)
        trace = os.path.join(tmp, "switch.json")
        run(moe_opt, "generate", "cache-trace", "--preset", "switch", "--seed", "1", "-o", trace)
        table = os.path.join(tmp, "switch-mrc.csv")
        run(moe_opt, "mrc", trace, "--csv", table)
        policies = sorted({r["policy"] for r in rows(table)})
        cases = [
            ("verify", verify, *expected_verify(verify)),
            ("sweep", sweep, *expected_sweep(sweep)),
            ("mrc", table, 1, policies),
        ]
        for name, source, figures, words in cases:
            page = os.path.join(tmp, f"{name}.html")
            run(moe_opt, "report", source, "-o", page)
            ok = not check_page(name, page, figures, words, args.png_dir)
            passed, failed = passed + ok, failed + (not ok)
    print(f"report pages (PNG in {os.path.relpath(args.png_dir, ROOT)}): {passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
