use super::*;
use crate::claims::{PaperScale, Verdict};
use crate::slimcaching::claims::{table, SlimClaim};

fn claims(ids: &[&str]) -> Vec<SlimClaim> {
    table()
        .into_iter()
        .filter(|c| ids.contains(&c.info.id))
        .collect()
}

/// `--scale paper` checks a claim on its paper family, not its small one, and lists a claim
/// without one with the reason, checking nothing; the scale is a setting of the folder.
#[test]
fn paper_scale_runs_the_paper_family_and_names_why_a_claim_has_none() {
    // A stand-in paper family: the small family seven seeds on.
    fn shifted(seed: u64) -> formulations::slimcaching::Instance {
        (claims(&["slimcaching/prop2-monotone"])[0].family)(seed + 7)
    }
    let mut chosen = claims(&["slimcaching/prop2-monotone", "slimcaching/prop2-neither"]);
    chosen[0].paper = PaperScale::Family("the tiny-top2 family at seed + 7", shifted);
    chosen[1].paper = PaperScale::Without("a reason given by the test");
    let out = std::env::temp_dir().join(format!("moe-opt-verify-scale-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&out);
    let options = VerifyOptions {
        instances: 3,
        seed: 5,
        jobs: 2,
        search_iterations: 0,
        search_restarts: 0,
        shrink_steps: 0,
        check: CheckOptions::default(),
        out: out.clone(),
        resume: false,
        tier: Tier::Extension,
        scale: Scale::Paper,
    };
    let rows = run(&[&chosen], &options).unwrap();
    let ids: Vec<String> = chosen.iter().map(|c| c.info.id.to_string()).collect();
    let journal = Journal::open(&out, true, &RunSettings::of(ids.clone(), &options)).unwrap();
    let hashes: Vec<&str> = journal
        .done
        .values()
        .map(|r| r.instance_sha256.as_str())
        .collect();
    let expected: Vec<String> = (0..3)
        .map(|i| canonical_sha256(&shifted(family_seed(5, i))))
        .collect();
    assert_eq!(
        hashes, expected,
        "only the paper family's instances, in order"
    );
    assert_eq!(rows[0].checked + rows[0].inconclusive, 3);
    assert_eq!(
        (rows[0].scale, rows[0].family.as_str()),
        (Scale::Paper, "the tiny-top2 family at seed + 7")
    );
    assert_eq!((rows[1].checked, rows[1].inconclusive), (0, 0));
    assert_eq!(rows[1].verdict, Verdict::NotWitnessed);
    assert_eq!(
        rows[1].note,
        "not checked at the papers' scale: a reason given by the test"
    );
    assert_eq!(rows[1].family, "a reason given by the test");
    let csv = std::fs::read_to_string(out.join("claims.csv")).unwrap();
    let header: Vec<&str> = csv.lines().next().unwrap().split(',').collect();
    assert_eq!(
        header[header.len() - 9..header.len() - 7],
        ["scale", "family"]
    );
    assert_eq!(
        header[header.len() - 7..header.len() - 5],
        ["vacuous", "not_applicable"]
    );
    // The folder was written at the papers' scale: resuming it at another is refused.
    let small = VerifyOptions {
        scale: Scale::Small,
        resume: true,
        ..options.clone()
    };
    let Err(formulations::Error::Invalid { field, reason, .. }) =
        Journal::open(&out, true, &RunSettings::of(ids, &small))
    else {
        panic!("a resume at another scale is refused");
    };
    assert_eq!(field, "scale");
    assert!(
        reason.contains("--scale paper") && reason.contains("small"),
        "{reason}"
    );
    let _ = std::fs::remove_dir_all(&out);
}

#[test]
fn size_column_names_are_those_of_the_mutate_modules() {
    fn names(d: Vec<(&'static str, u64)>) -> Vec<&'static str> {
        d.into_iter().map(|(n, _)| n).collect()
    }
    let prism = (crate::prism::claims::table()[0].family)(0);
    assert_eq!(
        names(crate::prism::mutate::dims(&prism)),
        <formulations::prism::Instance as Searchable>::DIMS
    );
    let zip = (crate::zipmoe::claims::table()[0].family)(0);
    assert_eq!(
        names(crate::zipmoe::mutate::dims(&zip)),
        <formulations::zipmoe::Instance as Searchable>::DIMS
    );
    let pool = (crate::zipmoe::planning::claims::table()[0].family)(0);
    assert_eq!(
        names(crate::zipmoe::planning::mutate::dims(&pool)),
        <formulations::zipmoe::pool::PoolInstance as Searchable>::DIMS
    );
}

#[test]
fn every_claim_with_a_margin_is_searched_from_its_lowest_margin() {
    let out = std::env::temp_dir().join(format!("moe-opt-verify-unit-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&out);
    let chosen = claims(&[
        "slimcaching/prop2-monotone",
        "slimcaching/prop2-neither",
        "slimcaching/prop6-single-server",
    ]);
    let options = VerifyOptions {
        instances: 6,
        seed: 3,
        jobs: 2,
        search_iterations: 15,
        search_restarts: 1,
        shrink_steps: 0,
        check: CheckOptions::default(),
        out: out.clone(),
        resume: false,
        tier: Tier::Extension,
        scale: Scale::Small,
    };
    let rows = run(&[&chosen], &options).unwrap();
    let ids = chosen.iter().map(|c| c.info.id.to_string()).collect();
    let journal = Journal::open(&out, true, &RunSettings::of(ids, &options)).unwrap();
    for (claim, row) in chosen.iter().zip(&rows) {
        let id = claim.info.id;
        let records: Vec<&Record> = journal.done.values().filter(|r| r.claim == id).collect();
        let searched = records.iter().find(|r| r.source == Source::Searched);
        // The lowest margin of the generated instances, ties to the lowest family seed.
        let start = records
            .iter()
            .filter(|r| r.source == Source::Generated)
            .filter_map(|r| r.check.margin.map(|m| (m, r.family_seed)))
            .min_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
        if id == "slimcaching/prop2-neither" {
            // An existence claim has no margin, hence no search.
            assert!(start.is_none() && searched.is_none(), "{id}");
            assert_eq!(row.worst_margin, None);
            continue;
        }
        let (start_margin, start_seed) = start.expect("margins on the family");
        let searched = searched.expect("a searched record");
        assert_eq!(searched.family_seed, start_seed, "{id}");
        // The climb never accepts a higher margin than its start.
        assert!(searched.check.margin.unwrap() <= start_margin, "{id}");
        assert!(searched_path(&out, &claim.info, 0).exists());
        let lowest = records
            .iter()
            .filter_map(|r| r.check.margin)
            .reduce(f64::min);
        assert_eq!(row.worst_margin, lowest, "{id}");
    }
    // instances.csv carries the margin right after the bound.
    let text = std::fs::read_to_string(out.join("instances.csv")).unwrap();
    let header: Vec<&str> = text.lines().next().unwrap().split(',').collect();
    let at = |name: &str| header.iter().position(|h| *h == name).unwrap();
    assert_eq!(at("margin"), at("bound") + 1);
    let claims_csv = std::fs::read_to_string(out.join("claims.csv")).unwrap();
    assert!(claims_csv
        .lines()
        .next()
        .unwrap()
        .contains(",worst_margin,"));
    let _ = std::fs::remove_dir_all(&out);
}
