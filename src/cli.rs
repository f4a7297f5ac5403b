//! The `moe-opt` command line. Bad input (unreadable or invalid files, unknown names, sizes
//! beyond a method's limit) ends with exit code 2 and one line on stderr; a solver failure
//! with exit code 1. Standard output closed early by its reader (`moe-opt claims --json | head
//! -1`) ends the command quietly with exit code 0: every command writes through `out!` /
//! `outln!`, which turn the write's `BrokenPipe` error into [`CliError::broken_pipe`].

/// `print!` for the commands: a write error (a reader that closed the pipe early, as in
/// `moe-opt claims --json | head -1`) becomes a [`CliError`] instead of a panic.
macro_rules! out {
    ($($arg:tt)*) => {
        $crate::cli::write_stdout(format_args!($($arg)*))?
    };
}

/// `println!` for the commands (see [`out!`]).
macro_rules! outln {
    () => {
        $crate::cli::write_stdout(format_args!("\n"))?
    };
    ($($arg:tt)*) => {
        $crate::cli::write_stdout(format_args!("{}\n", format_args!($($arg)*)))?
    };
}

/// `eprintln!` for the commands' notes (`wrote FILE`): under [`run_captured`] they go to its
/// buffer instead, for the Python package to show where its user looks.
macro_rules! note {
    ($($arg:tt)*) => {
        $crate::cli::write_note(format_args!($($arg)*))
    };
}

mod args;
mod cache;
mod demo;
pub(crate) mod flags;
mod problems;
mod text;

pub use args::FailOn;
use args::{Command, Output};
use demo::demo;
pub use demo::MAX_DEMO_INSTANCES;
use text::*;

use std::path::Path;

use clap::Parser;
use formulations::milp::SolveOptions;

use crate::claims::{CheckOptions, ClaimInfo, ClaimKind, Scale, Verdict};
use crate::generate::Made;
use crate::parametric::ParametricFamily;
use crate::registry::{ConfigSource, Entry, LpFormat, Registry, Rendered};
use crate::report::VERSION;
use crate::verify::{ClaimGroup, VerifyOptions};

/// Exact optimisation and the papers' algorithms for MoE expert placement, caching and scheduling.
#[derive(Debug, Parser)]
#[command(name = "moe-opt", version, about)]
pub struct Cli {
    #[command(subcommand)]
    command: Command,
}

impl Cli {
    /// Parses the process's arguments, with the registry's methods and presets in the help
    /// of `solve`, `compare` and `generate` (clap exits on `--help` and on bad arguments).
    pub fn parse_with(registry: &Registry) -> Self {
        Cli::try_parse_with(registry, std::env::args_os()).unwrap_or_else(|e| {
            if !e.use_stderr() {
                e.exit() // --help and --version: clap's own text on stdout
            }
            eprintln!("{}", one_line(&e));
            std::process::exit(e.exit_code())
        })
    }

    /// Parses `args` (the program's name first), with the registry's methods and presets in the
    /// help of `solve`, `compare` and `generate`; `--help` and `--version` are errors whose text
    /// is the help (clap's `DisplayHelp`, `DisplayVersion`).
    pub fn try_parse_with<I, T>(registry: &Registry, args: I) -> Result<Self, clap::Error>
    where
        I: IntoIterator<Item = T>,
        T: Into<std::ffi::OsString> + Clone,
    {
        use clap::{CommandFactory, FromArgMatches};
        let methods = registry_help(registry, |e| e.methods());
        let presets = registry_help(registry, |e| e.presets());
        let command = Cli::command()
            .mut_subcommand("solve", |c| c.after_long_help(methods.clone()))
            .mut_subcommand("compare", |c| c.after_long_help(methods.clone()))
            .mut_subcommand("generate", |c| c.after_long_help(presets.clone()));
        command
            .try_get_matches_from(args)
            .and_then(|matches| Cli::from_arg_matches(&matches))
    }
}

/// What a command run by [`run_captured`] wrote.
#[derive(Debug, Default)]
pub struct Captured {
    /// Its standard output.
    pub stdout: String,
    /// Its notes for standard error (`wrote FILE`), one per line.
    pub notes: String,
}

/// Runs the command line `args` (without the program's name) in this process and returns what
/// it wrote: the Python package's way in, so that a notebook gets the command's own output
/// without a subprocess. Bad arguments are a [`CliError`] of code 2 with clap's message on one
/// line; `--help` and `--version` return their text.
pub fn run_captured<I, T>(registry: &Registry, args: I) -> Result<Captured, CliError>
where
    I: IntoIterator<Item = T>,
    T: Into<std::ffi::OsString> + Clone,
{
    let args = std::iter::once(std::ffi::OsString::from("moe-opt"))
        .chain(args.into_iter().map(Into::into));
    let cli = match Cli::try_parse_with(registry, args) {
        Ok(cli) => cli,
        Err(e) if !e.use_stderr() => {
            return Ok(Captured {
                stdout: e.render().to_string(),
                notes: String::new(),
            })
        }
        Err(e) => {
            return Err(CliError {
                code: e.exit_code(),
                message: one_line(&e),
            })
        }
    };
    CAPTURE.with(|c| *c.borrow_mut() = Some((Vec::new(), String::new())));
    let result = run_with(registry, cli);
    let (stdout, notes) = CAPTURE.with(|c| c.borrow_mut().take()).unwrap_or_default();
    result.map(|()| Captured {
        stdout: String::from_utf8_lossy(&stdout).into_owned(),
        notes,
    })
}

thread_local! {
    /// Standard output and notes of [`run_captured`]'s command, when one runs on this thread.
    static CAPTURE: std::cell::RefCell<Option<(Vec<u8>, String)>> = const { std::cell::RefCell::new(None) };
}

/// Writes a note (see [`note!`]) to standard error, or to [`run_captured`]'s buffer.
pub(crate) fn write_note(args: std::fmt::Arguments) {
    let captured = CAPTURE.with(|c| match c.borrow_mut().as_mut() {
        Some((_, notes)) => {
            notes.push_str(&format!("{args}\n"));
            true
        }
        None => false,
    });
    if !captured {
        eprintln!("{args}");
    }
}

/// A command-line error as one line, like every other error: clap's message with its tips, without
/// the usage block (`--help` has it).
fn one_line(e: &clap::Error) -> String {
    let text = e.render().to_string();
    let mut line = String::new();
    for part in text.lines().map(str::trim).filter(|l| {
        !l.is_empty() && !l.starts_with("Usage:") && !l.starts_with("For more information")
    }) {
        if !line.is_empty() {
            // A list after "...provided:" continues the sentence; a tip starts a new one.
            line.push_str(if line.ends_with(':') { " " } else { "; " });
        }
        line.push_str(part);
    }
    format!("{line} (see --help)")
}

/// Per problem, its methods or presets, for `--help`.
fn registry_help(
    registry: &Registry,
    list: impl Fn(&dyn Entry) -> Vec<crate::registry::MethodInfo>,
) -> String {
    let mut text = String::new();
    for e in registry.entries() {
        let items = list(e);
        if items.is_empty() {
            continue;
        }
        text.push_str(&format!("{}:\n", e.tag()));
        for (name, what) in items {
            text.push_str(&format!("  {name:<22} {what}\n"));
        }
    }
    text
}

/// A failure with its exit code.
#[derive(Debug)]
pub struct CliError {
    /// 2 for bad input, 1 for a failure of moe-opt or the solver, 0 for standard output
    /// closed by its reader ([`CliError::broken_pipe`]).
    pub code: i32,
    /// One line for stderr.
    pub message: String,
}

impl CliError {
    fn input(message: impl Into<String>) -> Self {
        CliError {
            code: 2,
            message: message.into(),
        }
    }

    /// A bad value of `flag`, named in the message.
    fn flag(flag: &str, reason: impl std::fmt::Display) -> Self {
        CliError::input(format!("{flag}: {reason}"))
    }

    /// Standard output was closed by its reader (`moe-opt claims --json | head -1`): not a
    /// failure of moe-opt. Code 0 and no message; [`CliError::is_broken_pipe`] tells `main` to
    /// end quietly, as `head` and `grep -q` expect of a command upstream.
    pub fn broken_pipe() -> Self {
        CliError {
            code: 0,
            message: String::new(),
        }
    }

    /// True for [`CliError::broken_pipe`].
    pub fn is_broken_pipe(&self) -> bool {
        self.code == 0
    }
}

/// Writes to standard output and flushes, so a closed pipe is noticed at the write that meets
/// it (under [`run_captured`], to its buffer instead). Rust ignores SIGPIPE, so such a write returns `BrokenPipe` (`print!` would panic on it):
/// that is [`CliError::broken_pipe`]; any other write error is a failure (code 1).
pub(crate) fn write_stdout(args: std::fmt::Arguments) -> Result<(), CliError> {
    use std::io::Write;
    let captured = CAPTURE.with(|c| match c.borrow_mut().as_mut() {
        Some((buffer, _)) => buffer.write_fmt(args).map(|()| true),
        None => Ok(false),
    });
    if captured.unwrap_or(true) {
        return Ok(());
    }
    let mut stdout = std::io::stdout().lock();
    stdout
        .write_fmt(args)
        .and_then(|()| stdout.flush())
        .map_err(|e| {
            if e.kind() == std::io::ErrorKind::BrokenPipe {
                CliError::broken_pipe()
            } else {
                CliError {
                    code: 1,
                    message: format!("writing to standard output: {e}"),
                }
            }
        })
}

impl From<formulations::Error> for CliError {
    fn from(e: formulations::Error) -> Self {
        let code = match e {
            formulations::Error::Solver(_) => 1,
            _ => 2,
        };
        CliError {
            code,
            message: e.to_string(),
        }
    }
}

/// Runs a parsed command line on moe-opt's problems, printing to stdout.
pub fn run(cli: Cli) -> Result<(), CliError> {
    run_with(&crate::problems::builtin(), cli)
}

/// Runs a parsed command line on the problems of `registry` (moe-opt's, or with a user's own).
pub fn run_with(registry: &Registry, cli: Cli) -> Result<(), CliError> {
    match cli.command {
        Command::Generate {
            problem,
            preset,
            list_presets,
            config,
            print_config,
            family,
            param,
            seed,
            output,
        } => {
            let entry = registry.find(&problem)?;
            if let Some(name) = family.as_deref() {
                if matches!(name, "help" | "?") {
                    out!("{}", families_text(entry));
                    return Ok(());
                }
                let families = entry.families();
                let Some(chosen) = families.iter().find(|f| f.name == name) else {
                    return Err(CliError::input(format!(
                        "{} has no family `{name}`; --family help lists its families",
                        entry.tag()
                    )));
                };
                let Some(output) = output else {
                    return Err(CliError::input("--output is required"));
                };
                let Some(x) = param else {
                    return Err(CliError::input("--param is required with --family"));
                };
                return write_made(&output, &chosen.make(x)?);
            }
            if list_presets || matches!(preset.as_deref(), Some("help" | "?")) {
                out!("{}", presets_text(entry));
                return Ok(());
            }
            let source = ConfigSource {
                preset: preset.as_deref(),
                file: config.as_deref(),
            };
            if print_config {
                outln!("{}", to_json(&entry.config(source)?));
                return Ok(());
            }
            let Some(output) = output else {
                return Err(CliError::input(
                    "--output is required (or --print-config, --list-presets)",
                ));
            };
            let made = entry.generate(source, seed)?;
            write_made(&output, &made)
        }
        Command::Import {
            problem,
            args,
            output,
        } => {
            // A configuration's own errors (`<import config>`) name its file.
            let made = registry
                .find(&problem)?
                .import(&args)
                .map_err(|e| e.with_file_if(args.config.as_deref()))?;
            write_made(&output, &made)
        }
        Command::Solve {
            file,
            method,
            options,
            output,
        } => {
            let run = options.run_options();
            // A method's refusal (too large, ...) names the instance file like a load error.
            let solved = registry
                .of_file(&file)?
                .solver_for(&file, "solve")
                .and_then(|s| s.solve(&file, &method, &run));
            output.emit(solved.map_err(|e| e.with_file(&file))?)
        }
        Command::Compare {
            file,
            methods: names,
            options,
            output,
        } => {
            let run = options.run_options();
            let names = names.map(|n| rejoin_knobs(&n));
            output.emit(
                registry
                    .of_file(&file)?
                    .solver_for(&file, "compare")
                    .and_then(|s| s.compare(&file, names.as_deref(), &run))
                    .map_err(|e| e.with_file(&file))?,
            )
        }
        Command::WriteLp {
            file,
            output,
            format,
            model,
        } => {
            let (milp, which) = registry
                .of_file(&file)?
                .solver_for(&file, "write-lp")
                .and_then(|s| s.exact_milp(&file, model))
                .map_err(|e| e.with_file(&file))?;
            let text = match format {
                LpFormat::Lp => milp.to_lp(),
                LpFormat::Mps => milp.to_mps().map_err(|e| e.with_file(&file))?,
            };
            write_file(&output, text.as_bytes())?;
            note!(
                "wrote {} ({which}: {} variables, {} integer, {} rows)",
                output.display(),
                milp.num_vars(),
                milp.num_integers(),
                milp.num_rows()
            );
            Ok(())
        }
        Command::Problems { json } => {
            let list: Vec<serde_json::Value> = registry
                .entries()
                .map(|e| {
                    serde_json::json!({
                        "problem": e.tag(),
                        "about": e.about(),
                        "methods": e.methods().into_iter().map(|(n, d)| serde_json::json!({"name": n, "description": d})).collect::<Vec<_>>(),
                        "presets": e.presets().into_iter().map(|(n, d)| serde_json::json!({"name": n, "description": d})).collect::<Vec<_>>(),
                        "claims": e.claims().iter().flat_map(|g| g.infos()).map(|i| i.id).collect::<Vec<_>>(),
                        "families": e.families().iter().map(ParametricFamily::listing).collect::<Vec<_>>(),
                    })
                })
                .collect();
            if json {
                outln!("{}", to_json(&list));
            } else {
                out!("{}", problems_text(registry));
            }
            Ok(())
        }
        Command::Replay(args) => args.run(),
        Command::Mrc(args) => args.run(),
        Command::Route(args) => args.run(),
        Command::Pareto(args) => args.run(),
        Command::Offline(args) => args.run(),
        Command::Tpot(args) => args.run(),
        Command::Export(args) => args.run(),
        Command::Demo {
            instances,
            seed,
            out,
        } => demo(registry, instances, seed, &out),
        Command::Eplb {
            weights,
            replicas,
            groups,
            nodes,
            gpus,
            method,
            time_limit,
            output,
        } => {
            if method == "eplb" && time_limit.is_some() {
                return Err(CliError::flag(
                    "--time-limit",
                    "only --method exact takes a time limit (EPLB's algorithm is not limited)",
                ));
            }
            let report = if method == "exact" {
                crate::balance::commands::exact_eplb_command(
                    &weights,
                    [replicas, groups, nodes, gpus],
                    time_limit,
                )?
            } else {
                crate::eplb::eplb_command(&weights, replicas, groups, nodes, gpus)?
            };
            let table = problems::eplb_table(&report);
            output.emit(Rendered::new(&report, report.text()).with_table(table))
        }
        Command::Redundancy {
            file,
            extra_per_gpu,
            target,
            time_limit,
            output,
        } => {
            let (instance, options) = balance_input(&file, time_limit)?;
            let report =
                crate::balance::redundancy::redundancy(&instance, extra_per_gpu, target, &options)
                    .map_err(|e| e.with_file(&file))?;
            emit_with_rows(output, &report, report.text(), report.rows.iter())
        }
        Command::MigrationFront {
            file,
            max_budget,
            time_limit,
            output,
        } => {
            let (instance, options) = balance_input(&file, time_limit)?;
            let report =
                crate::balance::migration::migration_front(&instance, max_budget, &options)
                    .map_err(|e| e.with_file(&file))?;
            emit_with_rows(output, &report, report.text(), report.rows())
        }
        Command::Migrate {
            file,
            migration,
            options,
            output,
        } => {
            let config = migration.config()?;
            let report = crate::prism::commands::migrate(&file, &config, &options.run_options())?;
            let table = problems::migrate_table(&report);
            output.emit(Rendered::new(&report, report.text()).with_table(table))
        }
        Command::Plan {
            file,
            counts,
            top_k,
            model,
            synthetic,
            seed,
            generate,
            config,
            output,
        } => {
            let synthetic = generate.or(synthetic.then_some(seed));
            let source = match (file, counts, synthetic) {
                (Some(f), _, _) => problems::PlanSource::File(f),
                (_, Some(c), _) => problems::PlanSource::Counts(
                    c,
                    crate::registry::counts_header(top_k, model.as_deref())?,
                ),
                (_, _, Some(seed)) => problems::PlanSource::Generated(seed),
                _ => {
                    return Err(CliError::input(
                        "plan needs a planning instance FILE, --counts FILE or --synthetic \
                         [--seed S]",
                    ))
                }
            };
            output.emit(problems::zipmoe_plan(source, config.as_deref())?)
        }
        Command::Sweep {
            spec,
            out,
            jobs,
            resume,
            shard,
        } => {
            let (parsed, base) = crate::sweep::load_spec(&spec, registry)?;
            let options = crate::sweep::SweepOptions {
                jobs: jobs
                    .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get())),
                out: out.clone(),
                resume,
                shard,
            };
            let done = crate::sweep::run(&parsed, &base, &options, registry)?;
            let summary = crate::sweep::summarize(done.iter().flat_map(|c| &c.rows));
            out!("{}", crate::sweep::summary_text(&summary));
            let total = crate::sweep::cells(&parsed).len();
            outln!(
                "{} of {total} cells finished{}; results in {}",
                done.len(),
                shard.map_or(String::new(), |s| format!(
                    " (shard {}/{})",
                    s.index, s.count
                )),
                out.join("results.csv").display()
            );
            Ok(())
        }
        Command::Report { input, out } => {
            let page = crate::results_page::render(&input)?;
            let html = page.html(&format!("moe-opt report: {}", input.display()));
            let out = out.unwrap_or_else(|| {
                if input.is_dir() {
                    input.join("report.html")
                } else {
                    input.with_extension("html")
                }
            });
            write_file(&out, html.as_bytes())?;
            eprintln!(
                "wrote {} ({} figures, {} bytes)",
                out.display(),
                page.figures(),
                html.len()
            );
            Ok(())
        }
        Command::Merge { inputs, out } => {
            let report = crate::sweep::merge(&inputs, &out)?;
            outln!(
                "{} of {} cells merged into {}",
                report.present,
                report.cells,
                out.join("results.csv").display()
            );
            if !report.missing.is_empty() {
                let shown: Vec<String> =
                    report.missing.iter().take(20).map(u64::to_string).collect();
                outln!(
                    "missing {} cells: {}{}",
                    report.missing.len(),
                    shown.join(", "),
                    if report.missing.len() > 20 {
                        ", ..."
                    } else {
                        ""
                    }
                );
            }
            Ok(())
        }
        Command::Claims {
            premises: true,
            output,
        } => {
            let infos: Vec<crate::tier::PremiseInfo> = registry
                .claim_groups()
                .iter()
                .flat_map(|g| g.premises())
                .collect();
            let context = vec![("moe_opt_version", VERSION.into())];
            let rows = infos.iter().map(crate::registry::to_value).collect();
            let text = premises_text(&infos);
            let rendered = Rendered::new(&infos, text);
            output.emit(rendered.with_table(crate::export::Table::new(context, rows)))
        }
        Command::Claims { output, .. } => {
            let infos = all_claims(registry);
            let context = vec![("moe_opt_version", VERSION.into())];
            let rows = infos.iter().map(crate::registry::to_value).collect();
            let text = claims_text(&infos);
            let rendered = Rendered::new(&infos, text);
            output.emit(rendered.with_table(crate::export::Table::new(context, rows)))
        }
        Command::Verify {
            claim,
            paper,
            instance,
            instances,
            seed,
            jobs,
            time_limit,
            search,
            restarts,
            out,
            resume,
            json,
            fail_on,
            tier,
            scale,
        } => {
            let paper_scale = scale == Scale::Paper;
            let instances = instances.unwrap_or(if paper_scale { 20 } else { 200 });
            let restarts = restarts.unwrap_or(if paper_scale { 0 } else { 3 });
            let keep = |i: &ClaimInfo| {
                claim.as_deref().is_none_or(|id| i.id == id)
                    && paper.as_deref().is_none_or(|p| i.paper == p)
            };
            let chosen: Vec<Box<dyn ClaimGroup>> = registry
                .claim_groups()
                .iter()
                .filter_map(|g| g.select(&keep))
                .collect();
            if chosen.is_empty() {
                let ids: Vec<&str> = all_claims(registry).iter().map(|i| i.id).collect();
                return Err(CliError::flag(
                    "--claim/--paper",
                    format!("no claim matches; known claims: {}", ids.join(", ")),
                ));
            }
            if !(time_limit.is_finite() && time_limit > 0.0) {
                return Err(CliError::input(format!(
                    "--time-limit must be a positive number of seconds, got {time_limit}"
                )));
            }
            use crate::verify::{MAX_INSTANCES, MAX_SEARCH_ITERATIONS, MAX_SEARCH_RESTARTS};
            for (flag, what, value, limit, name) in [
                (
                    "--instances",
                    "instances",
                    instances,
                    MAX_INSTANCES,
                    "MAX_INSTANCES",
                ),
                (
                    "--search",
                    "neighbours",
                    search as u64,
                    MAX_SEARCH_ITERATIONS,
                    "MAX_SEARCH_ITERATIONS",
                ),
                (
                    "--restarts",
                    "searches",
                    restarts as u64,
                    MAX_SEARCH_RESTARTS,
                    "MAX_SEARCH_RESTARTS",
                ),
            ] {
                flags::size_at_most(
                    flag,
                    what,
                    value,
                    limit,
                    &format!("moe_opt::verify::{name}"),
                )?;
            }
            let check = CheckOptions {
                solve: SolveOptions {
                    time_limit_s: Some(time_limit),
                    ..SolveOptions::default()
                },
            };
            if let Some(file) = instance {
                let (result, classified) = chosen[0].recheck(0, &file, &check)?;
                let info = chosen[0].infos()[0];
                if json {
                    let mut value = serde_json::to_value(&result).expect("checks serialise");
                    value["tier"] = classified.tier.as_str().into();
                    value["broken_premises"] = classified.broken.clone().into();
                    outln!("{}", to_json(&value));
                } else {
                    out!("{}", check_text(&info, &result));
                    outln!(
                        "  tier {}{}",
                        classified.tier,
                        broken_text(&classified.broken)
                    );
                }
                let violated = info.kind == ClaimKind::Stated
                    && result.outcome == crate::claims::Outcome::Fail;
                return fail_on_violated(fail_on, violated.then_some(info.id));
            }
            let options = VerifyOptions {
                instances,
                seed,
                jobs: jobs
                    .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get())),
                search_iterations: search,
                search_restarts: restarts,
                shrink_steps: 200,
                check,
                out: out.clone(),
                resume,
                tier,
                scale,
            };
            let groups: Vec<&dyn ClaimGroup> = chosen.iter().map(|g| g.as_ref()).collect();
            let rows = crate::verify::run(&groups, &options)?;
            out!("{}", verify_text(&rows, &out));
            let violated = rows
                .iter()
                .filter(|r| r.kind == Some(ClaimKind::Stated) && r.verdict == Verdict::Violated)
                .map(|r| r.id.as_str());
            fail_on_violated(fail_on, violated)
        }
    }
}

/// Status 1, naming the claims, when `--fail-on violated` was given and `violated` names any.
fn fail_on_violated<'a>(
    fail_on: Option<FailOn>,
    violated: impl IntoIterator<Item = &'a str>,
) -> Result<(), CliError> {
    let ids: Vec<&str> = violated.into_iter().collect();
    match fail_on {
        Some(FailOn::Violated) if !ids.is_empty() => Err(CliError {
            code: 1,
            message: format!(
                "--fail-on violated: {} stated claim{} violated: {}",
                ids.len(),
                if ids.len() == 1 { "" } else { "s" },
                ids.join(", ")
            ),
        }),
        _ => Ok(()),
    }
}

/// Writes a generated or imported instance and says so on stderr.
fn write_made(output: &Path, made: &Made) -> Result<(), CliError> {
    write_file(output, &made.instance)?;
    if made.summary.is_empty() {
        note!("wrote {}", output.display());
    } else if made.summary.contains('\n') {
        note!("{}\nwrote {}", made.summary, output.display());
    } else {
        note!("wrote {} ({})", output.display(), made.summary);
    }
    Ok(())
}

/// Undoes the comma split of a list whose items may carry several knobs: a piece `name=value`
/// with no `:` continues the item before it, so `max-rank:m=4,j=1,lru` is two items.
pub(crate) fn rejoin_knobs(pieces: &[String]) -> Vec<String> {
    let mut items: Vec<String> = Vec::new();
    for piece in pieces {
        match items.last_mut() {
            Some(last) if piece.contains('=') && !piece.contains(':') && last.contains(':') => {
                last.push(',');
                last.push_str(piece);
            }
            _ => items.push(piece.clone()),
        }
    }
    items
}

/// A balance instance and the solve options of a `--time-limit` (`redundancy`,
/// `migration-front`).
fn balance_input(
    file: &Path,
    time_limit: Option<f64>,
) -> Result<(formulations::balance::Instance, SolveOptions), CliError> {
    let instance = formulations::balance::load(file)?;
    let options = SolveOptions {
        time_limit_s: time_limit,
        ..SolveOptions::default()
    };
    Ok((instance, options))
}

/// A report whose `--csv` table has a row per item of `rows`.
fn emit_with_rows<R: serde::Serialize, T: serde::Serialize>(
    output: Output,
    report: &R,
    text: String,
    rows: impl IntoIterator<Item = T>,
) -> Result<(), CliError> {
    let rows = rows
        .into_iter()
        .map(|r| crate::registry::to_value(&r))
        .collect();
    let table = crate::export::Table::new(
        crate::registry::report_context(&crate::registry::to_value(report)),
        rows,
    );
    output.emit(Rendered::new(report, text).with_table(table))
}

/// Every registered claim, in paper order.
fn all_claims(registry: &Registry) -> Vec<ClaimInfo> {
    registry
        .claim_groups()
        .iter()
        .flat_map(|g| g.infos())
        .collect()
}

fn to_json<T: serde::Serialize>(value: &T) -> String {
    serde_json::to_string_pretty(value).expect("reports always serialise")
}

fn write_json<T: serde::Serialize>(path: &Path, value: &T) -> Result<(), CliError> {
    let mut text = to_json(value);
    text.push('\n');
    write_file(path, text.as_bytes())
}

pub(crate) fn write_file(path: &Path, bytes: &[u8]) -> Result<(), CliError> {
    std::fs::write(path, bytes).map_err(|source| {
        formulations::Error::Io {
            path: path.to_path_buf(),
            source,
        }
        .into()
    })
}
