//! The module structure: no import circles between the files of the three crates.
//!
//! Every `.rs` file under `src/`, `formulations/src/` and `verification/src/` is a node; an
//! arrow runs from a file to each file whose items it names (`use` lists and `crate::`,
//! `super::`, `formulations::` paths in its code, comments and its `#[cfg(test)]` module left
//! out; a folder module's own `mod.rs` re-exporting its children is structure, not an arrow).
//! A circle is a strongly connected component of more than one file (petgraph's Tarjan); the
//! test fails on any circle not in [`KNOWN`], and on a known one that is gone (so the list only
//! shrinks).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use petgraph::algo::tarjan_scc;
use petgraph::graph::DiGraph;

/// Circles still to be broken, each as its sorted files. Empty is the goal.
const KNOWN: &[&[&str]] = &[];

/// A crate: its name in paths and its source folder.
const CRATES: &[(&str, &str)] = &[
    ("moe_opt", "src"),
    ("formulations", "formulations/src"),
    ("verification", "verification/src"),
];

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The module path of a file below its crate's source folder (`a/b.rs`, `a/b/mod.rs`: `a::b`;
/// `lib.rs`, `main.rs`: the root).
fn module_of(relative: &Path) -> Vec<String> {
    let mut parts: Vec<String> = relative
        .iter()
        .map(|p| p.to_string_lossy().trim_end_matches(".rs").to_string())
        .collect();
    if matches!(
        parts.last().map(String::as_str),
        Some("mod" | "lib" | "main")
    ) {
        parts.pop();
    }
    parts
}

/// Code without comments and without the trailing `#[cfg(test)]` module.
fn code_of(text: &str) -> String {
    let text = match text.find("#[cfg(test)]\nmod ") {
        Some(i) => &text[..i],
        None => text,
    };
    text.lines()
        .map(|l| match l.find("//") {
            Some(i) => &l[..i],
            None => l,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// Every path a `use` item names, its brace groups expanded (`a::{b, c::d}`: `a::b`, `a::c::d`).
fn expand(tree: &str) -> Vec<String> {
    let tree = tree.trim();
    match tree.find('{') {
        None => vec![tree.to_string()],
        Some(open) => {
            let prefix = &tree[..open];
            let inner = &tree[open + 1..tree.rfind('}').unwrap_or(tree.len())];
            let (mut depth, mut start, mut items) = (0, 0, Vec::new());
            for (i, c) in inner.char_indices() {
                match c {
                    '{' => depth += 1,
                    '}' => depth -= 1,
                    ',' if depth == 0 => {
                        items.push(&inner[start..i]);
                        start = i + 1;
                    }
                    _ => {}
                }
            }
            items.push(&inner[start..]);
            items
                .into_iter()
                .filter(|i| !i.trim().is_empty())
                .flat_map(expand)
                .map(|rest| format!("{prefix}{rest}"))
                .collect()
        }
    }
}

/// The paths a file's code names: its `use` items and the qualified paths in its body.
fn paths_of(code: &str) -> Vec<String> {
    let mut paths = Vec::new();
    let mut lines = code.lines();
    while let Some(line) = lines.next() {
        let item = line.trim_start();
        let item = item
            .strip_prefix("pub ")
            .or_else(|| item.strip_prefix("pub(crate) "))
            .or_else(|| item.strip_prefix("pub(super) "))
            .unwrap_or(item);
        let Some(tree) = item.strip_prefix("use ") else {
            continue;
        };
        let mut tree = tree.to_string();
        while !tree.contains(';') {
            match lines.next() {
                Some(more) => tree.push_str(more),
                None => break,
            }
        }
        let tree = tree.split(';').next().unwrap_or_default();
        paths.extend(expand(&tree.replace(char::is_whitespace, "")));
    }
    let bytes = code.as_bytes();
    for start in ["crate::", "super::", "formulations::", "verification::"] {
        for (i, _) in code.match_indices(start) {
            if i > 0
                && (bytes[i - 1].is_ascii_alphanumeric()
                    || bytes[i - 1] == b'_'
                    || bytes[i - 1] == b':')
            {
                continue;
            }
            let len = code[i..]
                .find(|c: char| !(c.is_alphanumeric() || c == '_' || c == ':'))
                .unwrap_or(code.len() - i);
            paths.push(code[i..i + len].trim_end_matches(':').to_string());
        }
    }
    paths
}

/// The import graph: file -> the files it names.
fn imports(root: &Path) -> BTreeMap<String, BTreeSet<String>> {
    // (crate, module path) -> file, for every file.
    let mut files: BTreeMap<(String, Vec<String>), String> = BTreeMap::new();
    let mut sources = Vec::new();
    for &(name, dir) in CRATES {
        let mut found = Vec::new();
        rust_files(&root.join(dir), &mut found);
        for path in found {
            let shown = path.strip_prefix(root).unwrap().display().to_string();
            let module = module_of(path.strip_prefix(root.join(dir)).unwrap());
            if shown.ends_with("main.rs") && name == "moe_opt" {
                continue; // the binary: it names the library from outside
            }
            files.insert((name.to_string(), module.clone()), shown.clone());
            sources.push((name, module, shown, path));
        }
    }
    let resolve = |krate: &str, segments: &[String]| -> Option<String> {
        (1..=segments.len())
            .rev()
            .find_map(|n| files.get(&(krate.to_string(), segments[..n].to_vec())))
            .cloned()
    };
    let mut graph: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (krate, module, shown, path) in &sources {
        let code = code_of(&std::fs::read_to_string(path).unwrap());
        let is_folder_module = shown.ends_with("mod.rs") || shown.ends_with("lib.rs");
        let arrows = graph.entry(shown.clone()).or_default();
        for p in paths_of(&code) {
            let segments: Vec<String> = p.split("::").map(str::to_string).collect();
            let (target_crate, absolute) = match segments[0].as_str() {
                "crate" => (krate.to_string(), segments[1..].to_vec()),
                "formulations" | "verification" => (segments[0].clone(), segments[1..].to_vec()),
                "super" => {
                    let mut base = module.clone();
                    let mut s = &segments[..];
                    while s.first().is_some_and(|x| x == "super") {
                        base.pop();
                        s = &s[1..];
                    }
                    base.extend(s.iter().cloned());
                    (krate.to_string(), base)
                }
                // A sibling or child module named from a folder module (`use model::Trace`).
                first
                    if is_folder_module
                        && files.contains_key(&(
                            krate.to_string(),
                            [module.clone(), vec![first.to_string()]].concat(),
                        )) =>
                {
                    continue; // a folder module's own children: structure
                }
                _ => continue,
            };
            if let Some(target) = resolve(&target_crate, &absolute) {
                // A folder module re-exporting or declaring its own children is structure.
                let child_of_self = target_crate == *krate
                    && is_folder_module
                    && absolute.len() > module.len()
                    && absolute[..module.len()] == module[..];
                if target != *shown && !child_of_self {
                    arrows.insert(target);
                }
            }
        }
    }
    graph
}

/// The circles: strongly connected components of more than one file, each sorted.
fn circles(graph: &BTreeMap<String, BTreeSet<String>>) -> BTreeSet<Vec<String>> {
    let mut g = DiGraph::<&str, ()>::new();
    let nodes: BTreeMap<&str, _> = graph.keys().map(|k| (k.as_str(), g.add_node(k))).collect();
    for (from, tos) in graph {
        for to in tos {
            if let Some(&t) = nodes.get(to.as_str()) {
                g.add_edge(nodes[from.as_str()], t, ());
            }
        }
    }
    tarjan_scc(&g)
        .into_iter()
        .filter(|c| c.len() > 1)
        .map(|c| {
            let mut files: Vec<String> = c.into_iter().map(|n| g[n].to_string()).collect();
            files.sort();
            files
        })
        .collect()
}

#[test]
fn no_new_import_circles() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let graph = imports(root);
    assert!(graph.len() > 100, "only {} files read", graph.len());
    let found = circles(&graph);
    let known: BTreeSet<Vec<String>> = KNOWN
        .iter()
        .map(|c| c.iter().map(|s| s.to_string()).collect())
        .collect();
    let describe = |c: &Vec<String>| {
        c.iter()
            .map(|f| {
                let names: Vec<&str> = graph[f]
                    .iter()
                    .filter(|t| c.contains(t))
                    .map(String::as_str)
                    .collect();
                format!("  {f} -> {}", names.join(", "))
            })
            .collect::<Vec<_>>()
            .join("\n")
    };
    let new: Vec<String> = found.difference(&known).map(describe).collect();
    assert!(new.is_empty(), "import circles:\n{}", new.join("\n\n"));
    let gone: Vec<_> = known.difference(&found).collect();
    assert!(
        gone.is_empty(),
        "circles broken since: remove them from KNOWN: {gone:?}"
    );
}

#[test]
fn the_reader_sees_a_circle_and_expands_use_groups() {
    assert_eq!(
        expand("crate::a::{b,c::{d,e}}"),
        ["crate::a::b", "crate::a::c::d", "crate::a::c::e"]
    );
    let mut graph = BTreeMap::new();
    graph.insert("a".to_string(), BTreeSet::from(["b".to_string()]));
    graph.insert("b".to_string(), BTreeSet::from(["a".to_string()]));
    graph.insert("c".to_string(), BTreeSet::from(["a".to_string()]));
    assert_eq!(
        circles(&graph),
        BTreeSet::from([vec!["a".to_string(), "b".to_string()]])
    );
}
