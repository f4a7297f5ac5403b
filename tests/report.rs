//! `moe-opt report`: the page of a short verify run, of a small sweep (and its merged shards)
//! and of an `mrc --csv` table, each checked against the CSV files it was made from (the
//! expected claims, verdicts, figure counts and means are read here from the CSVs, not from the
//! report's code); malformed folders and files are refused naming the file, the line and the
//! column, with nothing written.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

mod common;
use common::{csv_records, moe_opt, ok, refused, scratch, trace};

/// `report INPUT -o OUT`: the page.
fn report(input: &Path, out: &Path) -> String {
    ok(moe_opt().arg("report").arg(input).arg("-o").arg(out));
    std::fs::read_to_string(out).unwrap()
}

/// `report INPUT -o OUT` refused: its stderr; nothing may be left at OUT.
fn report_refused(input: &Path, out: &Path) -> String {
    let err = refused(moe_opt().arg("report").arg(input).arg("-o").arg(out));
    assert!(!out.exists(), "{} written despite: {err}", out.display());
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    err
}

fn figures(page: &str) -> usize {
    page.matches("<svg").count()
}

/// The page's `<section>` of a claim (from its heading to the next section).
fn claim_section<'a>(page: &'a str, id: &str) -> &'a str {
    page.split("<section")
        .find(|s| s.contains(&format!("<h3>{id} ")))
        .unwrap_or_else(|| panic!("no section for {id}"))
}

/// A short run of every claim: violations with counterexamples (Prism, SMoE), claims with a
/// constant bound, with a bound per instance (Thm. 1, Thm. 3.1) and without ratios.
fn verify_run(dir: &Path) -> PathBuf {
    let run = dir.join("run");
    ok(moe_opt()
        .args([
            "verify",
            "--instances",
            "3",
            "--search",
            "20",
            "--restarts",
            "1",
        ])
        .args(["--jobs", "1", "--out"])
        .arg(&run));
    run
}

#[test]
fn a_verify_folder_shows_every_claim_its_ratios_and_its_counterexamples() {
    let dir = scratch("verify");
    let run = verify_run(&dir);
    let page = report(&run, &dir.join("page.html"));

    let claims = csv_records(&run.join("claims.csv"));
    assert!(claims.len() >= 20, "{} claims", claims.len());
    for c in &claims {
        let section = claim_section(&page, &c["id"]);
        let verdict = &c["verdict"];
        assert!(
            section.contains(&format!(">{verdict}</span></h3>")),
            "{}: verdict {verdict} not in its heading",
            c["id"]
        );
    }
    assert!(claims.iter().any(|c| c["verdict"] == "violated"));

    // A figure per claim with a ratio on some instance, counted from instances.csv.
    let instances = csv_records(&run.join("instances.csv"));
    let with_ratio: BTreeSet<&str> = (instances.iter())
        .filter(|r| !r["ratio"].is_empty())
        .map(|r| r["claim"].as_str())
        .collect();
    assert!(with_ratio.len() >= 10);
    assert_eq!(figures(&page), with_ratio.len());
    for c in &claims {
        let has_figure = claim_section(&page, &c["id"]).contains("<svg");
        assert_eq!(
            has_figure,
            with_ratio.contains(c["id"].as_str()),
            "{}",
            c["id"]
        );
    }

    // Each counterexample with the command `verify` prints, and the command re-checks it.
    let saved: Vec<_> = claims
        .iter()
        .filter(|c| !c["counterexample"].is_empty())
        .collect();
    assert!(!saved.is_empty());
    for c in &saved {
        let command = format!(
            "moe-opt verify --claim {} --instance {}",
            c["id"],
            run.join(&c["counterexample"]).display()
        );
        assert!(
            claim_section(&page, &c["id"]).contains(&command),
            "{command}"
        );
        let args: Vec<&str> = command.split(' ').skip(1).collect();
        let check = ok(moe_opt().args(&args).arg("--json"));
        assert!(
            check.contains("\"outcome\": \"fail\""),
            "{command}: {check}"
        );
    }

    // The same folder gives the same bytes; nothing is fetched from elsewhere (the SVG
    // namespace, `xmlns="http://www.w3.org/2000/svg"`, is a name, not an address).
    assert_eq!(page, report(&run, &dir.join("again.html")));
    for outside in ["href=\"http", "src=", "<script", "<link", "@import", "url("] {
        assert!(!page.contains(outside), "{outside}");
    }
}

/// A tiny ZipMoE sweep: two axes, 2 seeds, an exact method and three others.
const SPEC: &str = "problem = \"zipmoe\"\npreset = \"tiny\"\nseeds = 2\n\
    methods = [\"exhaustive\", \"cache-affinity\", \"fifo\", \"random\"]\ntime_limit_s = 60\n\n\
    [[axes]]\npath = \"threads\"\nvalues = [1, 2]\n\n\
    [[axes]]\npath = \"layer_experts\"\nvalues = [2, 3]\n";

#[test]
fn a_sweep_folder_shows_every_method_and_two_figures_per_axis() {
    let dir = scratch("sweep");
    let spec = dir.join("spec.toml");
    std::fs::write(&spec, SPEC).unwrap();
    let all = dir.join("all");
    let printed = ok(moe_opt()
        .arg("sweep")
        .arg(&spec)
        .args(["--jobs", "1", "--out"])
        .arg(&all));
    let page = report(&all, &dir.join("page.html"));

    let rows = csv_records(&all.join("results.csv"));
    let header: Vec<String> = csv::Reader::from_path(all.join("results.csv"))
        .unwrap()
        .headers()
        .unwrap()
        .iter()
        .map(String::from)
        .collect();
    let axes = &header[2..header.iter().position(|h| h == "instance_sha256").unwrap()];
    assert_eq!(axes, ["threads", "layer_experts"]);
    // Per axis, a figure of the objective and one of the ratio, when some row has them.
    let has = |column: &str| rows.iter().any(|r| !r[column].is_empty());
    let expected = axes.len() * (usize::from(has("objective")) + usize::from(has("ratio")));
    assert_eq!(expected, 4);
    assert_eq!(figures(&page), expected);

    // Every method in the summary, with its cells and mean ratio, here and on the terminal.
    let mut by_method: BTreeMap<&str, (BTreeSet<&str>, Vec<f64>)> = BTreeMap::new();
    for r in &rows {
        let entry = by_method.entry(r["method"].as_str()).or_default();
        entry.0.insert(r["cell"].as_str());
        entry.1.extend(r["ratio"].parse::<f64>().ok());
    }
    assert_eq!(by_method.len(), 4);
    for (method, (cells, ratios)) in &by_method {
        let mean = ratios.iter().sum::<f64>() / ratios.len() as f64;
        let row = page
            .split("<tr>")
            .find(|tr| tr.starts_with(&format!("<td>{method}</td>")))
            .unwrap_or_else(|| panic!("{method} not in the summary"));
        assert!(row.contains(&format!(">{}</td>", cells.len())), "{row}");
        assert!(
            row.contains(&format!(">{mean:.4}</td>")),
            "{method}: {mean} in {row}"
        );
        let line = printed
            .lines()
            .find(|l| l.split_whitespace().next() == Some(method))
            .unwrap_or_else(|| panic!("{method} not in sweep's summary: {printed}"));
        assert!(line.contains(&format!("{mean:.4}")), "{line}");
    }

    // Two shards merged: the same page but for the folder's name in the title.
    let (a, b, merged) = (dir.join("a"), dir.join("b"), dir.join("merged"));
    for (shard, out) in [("0/2", &a), ("1/2", &b)] {
        ok(moe_opt()
            .arg("sweep")
            .arg(&spec)
            .args(["--jobs", "1", "--shard", shard, "--out"])
            .arg(out));
    }
    ok(moe_opt()
        .arg("merge")
        .arg(&a)
        .arg(&b)
        .arg("--out")
        .arg(&merged));
    let merged_page = report(&merged, &dir.join("merged.html"));
    let untitled = |page: &str, folder: &Path| page.replace(&folder.display().to_string(), "DIR");
    assert_eq!(untitled(&merged_page, &merged), untitled(&page, &all));
}

#[test]
fn mrc_tables_are_drawn_from_a_file_or_a_folder() {
    let dir = scratch("mrc");
    let trace = trace(&dir, "switch");
    let tables = dir.join("tables");
    std::fs::create_dir_all(&tables).unwrap();
    let table = tables.join("switch-mrc.csv");
    ok(moe_opt().arg("mrc").arg(&trace).arg("--csv").arg(&table));
    // A CSV of another kind beside it is left alone.
    std::fs::write(tables.join("other.csv"), "a,b\n1,2\n").unwrap();

    let rows = csv_records(&table);
    let policies: BTreeSet<&str> = rows.iter().map(|r| r["policy"].as_str()).collect();
    assert_eq!(policies, BTreeSet::from(["belady", "lru"]));
    for page in [
        report(&table, &dir.join("file.html")),
        report(&tables, &dir.join("folder.html")),
    ] {
        assert_eq!(figures(&page), 1);
        for p in &policies {
            assert!(page.contains(&format!("<td>{p}</td>")), "{p}");
        }
        assert!(!page.contains("other.csv"));
    }
    // The default page goes beside the table.
    ok(moe_opt().arg("report").arg(&table));
    assert!(tables.join("switch-mrc.html").is_file());
}

#[test]
fn redundancy_tables_are_drawn_from_a_file_or_a_folder() {
    let dir = scratch("redundancy");
    // Two layers at two slot counts. Over layers, balancedness is the sum of the means over
    // the sum of the maxima (mean = balancedness x max_load): at 0 redundant slots the means
    // are 90 and 45, so the best plan 135 / 150 = 0.9, the bound 135 / 143 = 0.9441 and EPLB
    // 135 / 180 = 0.75; at 4, the best plan and the bound 135 / 135 = 1 and EPLB 135 / 150.
    let header = "moe_opt_version,instance_name,instance_sha256,slots,redundant_slots,layer,\
                  max_load,bound,eplb_max_load,balancedness,balancedness_upper,status,\
                  eplb_balancedness";
    let rows = [
        "x,i,h,8,0,0,100,95,120,0.9,0.947,time_limit,0.75",
        "x,i,h,8,0,1,50,48,60,0.9,0.9375,time_limit,0.75",
        "x,i,h,12,4,0,90,90,100,1.0,1.0,optimal,0.9",
        "x,i,h,12,4,1,45,45,50,1.0,1.0,optimal,0.9",
    ];
    let tables = dir.join("tables");
    std::fs::create_dir_all(&tables).unwrap();
    let table = tables.join("redundancy.csv");
    std::fs::write(&table, format!("{header}\n{}\n", rows.join("\n"))).unwrap();
    for page in [
        report(&table, &dir.join("file.html")),
        report(&tables, &dir.join("folder.html")),
    ] {
        assert_eq!(figures(&page), 1);
        for row in [
            ["0", "8", "2", "0.9000", "0.9441", "0.7500"],
            ["4", "12", "2", "1.0000", "1.0000", "0.9000"],
        ] {
            let cells: String = row
                .iter()
                .map(|c| format!("<td class=\"num\">{c}</td>"))
                .collect();
            assert!(page.contains(&cells), "{cells}");
        }
    }
    // A load that is not a number is refused, naming the file, line and column.
    std::fs::write(
        &table,
        format!("{header}\n{}\n", rows[0].replace(",100,", ",x,")),
    )
    .unwrap();
    let err = report_refused(&table, &dir.join("bad.html"));
    assert!(
        err.contains("redundancy.csv") && err.contains("max_load"),
        "{err}"
    );
}

/// A change to one line of a file.
type Edit = fn(&str) -> String;

/// Replaces line `line` (1-based) of a file.
fn edit_line(path: &Path, line: usize, edit: Edit) {
    let text = std::fs::read_to_string(path).unwrap();
    let mut lines: Vec<String> = text.lines().map(String::from).collect();
    lines[line - 1] = edit(&lines[line - 1]);
    std::fs::write(path, lines.join("\n") + "\n").unwrap();
}

fn copy_folder(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let p = e.unwrap().path();
        if p.is_file() {
            std::fs::copy(&p, to.join(p.file_name().unwrap())).unwrap();
        }
    }
}

#[test]
fn malformed_inputs_are_refused_naming_the_file_line_and_column() {
    let dir = scratch("malformed");
    let run = verify_run(&dir);
    let out = dir.join("page.html");

    // Not an output folder, nor a file at all.
    let empty = dir.join("empty");
    std::fs::create_dir_all(&empty).unwrap();
    let err = report_refused(&empty, &out);
    assert!(
        err.contains(&empty.display().to_string()) && err.contains("claims.csv"),
        "{err}"
    );
    let err = report_refused(&dir.join("nowhere"), &out);
    assert!(err.contains("nowhere"), "{err}");

    // claims.csv without instances.csv.
    let half = dir.join("half");
    copy_folder(&run, &half);
    std::fs::remove_file(half.join("instances.csv")).unwrap();
    let err = report_refused(&half, &out);
    assert!(
        err.contains("instances.csv") && err.contains("missing"),
        "{err}"
    );

    // Broken files of a verify folder: (file, edit of line 2, words the error must hold).
    let broken: [(&str, Edit, &[&str]); 5] = [
        (
            "claims.csv",
            |l| l.replacen(",holds,", ",holds,x", 1),
            &["line 2: checked", "not a count"],
        ),
        (
            "claims.csv",
            |l| l.replacen(",holds,", ",maybe,", 1),
            &["line 2: verdict", "\"maybe\""],
        ),
        (
            "instances.csv",
            |l| l.rsplitn(3, ',').last().unwrap().to_string(),
            &["line 2", "fields"],
        ),
        (
            "instances.csv",
            |l| l.replacen(",pass,", ",passed,", 1),
            &["line 2: outcome"],
        ),
        (
            "instances.csv",
            |l| l.replacen("slimcaching/", "nobody/", 1),
            &["line 2: claim", "nobody/"],
        ),
    ];
    for (k, (file, edit, words)) in broken.iter().enumerate() {
        let copy = dir.join(format!("broken-{k}"));
        copy_folder(&run, &copy);
        edit_line(&copy.join(file), 2, *edit);
        let err = report_refused(&copy, &out);
        assert!(
            err.contains(&copy.join(file).display().to_string()),
            "{err}"
        );
        for w in *words {
            assert!(err.contains(w), "{w:?} not in {err}");
        }
    }

    // Bytes that are not text, an empty file, a run.json of the wrong shape.
    let copy = dir.join("binary");
    copy_folder(&run, &copy);
    std::fs::write(copy.join("claims.csv"), b"id,verdict\n\xff\xfe,\x00\n").unwrap();
    let err = report_refused(&copy, &out);
    assert!(err.contains("claims.csv") && err.contains("UTF-8"), "{err}");
    std::fs::write(copy.join("claims.csv"), b"").unwrap();
    let err = report_refused(&copy, &out);
    assert!(
        err.contains("claims.csv") && err.contains("header"),
        "{err}"
    );
    let copy = dir.join("settings");
    copy_folder(&run, &copy);
    std::fs::write(copy.join("run.json"), "{\"claims\": 3}").unwrap();
    let err = report_refused(&copy, &out);
    assert!(err.contains("run.json"), "{err}");

    // A sweep's results.csv without a column; a file that is not an mrc table.
    let sweep = dir.join("sweep");
    std::fs::create_dir_all(&sweep).unwrap();
    std::fs::write(
        sweep.join("results.csv"),
        "cell,seed,instance_sha256,method\n0,0,ab,milp\n",
    )
    .unwrap();
    let err = report_refused(&sweep, &out);
    assert!(
        err.contains("results.csv") && err.contains("`objective`"),
        "{err}"
    );
    let err = report_refused(&run.join("claims.csv"), &out);
    assert!(
        err.contains("claims.csv") && err.contains("mrc --csv"),
        "{err}"
    );
}

#[test]
fn ratios_a_chart_cannot_place_are_left_out_and_said() {
    let dir = scratch("non-finite");
    let run = verify_run(&dir);
    // Three instances of one ratio claim get a ratio of NaN, infinity and 1e300.
    let path = run.join("instances.csv");
    let mut reader = csv::Reader::from_path(&path).unwrap();
    let header = reader.headers().unwrap().clone();
    let ratio = header.iter().position(|h| h == "ratio").unwrap();
    let mut records: Vec<csv::StringRecord> = reader.records().map(|r| r.unwrap()).collect();
    let claim = "smoe/eq1-router-optimal";
    let mut edited = 0;
    for r in records.iter_mut().filter(|r| &r[0] == claim).take(3) {
        let mut cells: Vec<String> = r.iter().map(String::from).collect();
        cells[ratio] = ["NaN", "inf", "1e300"][edited].into();
        *r = csv::StringRecord::from(cells);
        edited += 1;
    }
    assert_eq!(edited, 3);
    let mut writer = csv::Writer::from_path(&path).unwrap();
    writer.write_record(&header).unwrap();
    for r in &records {
        writer.write_record(r).unwrap();
    }
    writer.flush().unwrap();
    let page = report(&run, &dir.join("page.html"));
    let section = claim_section(&page, claim);
    assert!(
        section.contains("<svg") && section.contains("3 not drawn"),
        "{section}"
    );
}
