//! The story generator of the lecture models' training text (`train::stories`): seeded, each
//! kind of episode present, pronouns that fit their antecedents, indirect-object prompts
//! whose answer is the name said once, and evaluation names and templates never in training.

use std::collections::HashSet;

use transformer_viz::train::stories::{ioi_prompts, names, stories, Split, SHOWCASE_NAMES};

fn words(text: &str) -> HashSet<String> {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_string)
        .collect()
}

#[test]
fn the_same_seed_gives_the_same_stories_and_another_seed_others() {
    let a = stories(7, 50, Split::Train);
    assert_eq!(a, stories(7, 50, Split::Train));
    assert_ne!(a, stories(8, 50, Split::Train));
    assert_eq!(a.len(), 50);
    assert!(a.iter().all(|s| s.split(". ").count() >= 3), "{a:?}");
}

#[test]
fn the_two_sides_share_no_name_and_the_showcase_names_are_held_out() {
    let (train_f, train_m) = names(Split::Train);
    let (held_f, held_m) = names(Split::HeldOut);
    let train: HashSet<_> = train_f.iter().chain(&train_m).collect();
    let held: HashSet<_> = held_f.iter().chain(&held_m).collect();
    assert!(train.is_disjoint(&held));
    assert!(
        train.len() >= 30 && held.len() >= 8,
        "{} {}",
        train.len(),
        held.len()
    );
    for name in SHOWCASE_NAMES {
        assert!(held.contains(&name), "{name}");
    }
    // No held-out name appears anywhere in a thousand training stories.
    let seen: HashSet<String> = stories(1, 1000, Split::Train)
        .iter()
        .flat_map(|s| words(s))
        .collect();
    for name in &held {
        assert!(!seen.contains(**name), "{name} is in the training stories");
    }
}

#[test]
fn every_kind_of_episode_is_there() {
    let text = stories(3, 300, Split::Train).join("\n");
    for cue in [
        " gave it to the ",   // it: a thing
        " was happy to see ", // he / she: decided by gender
        "They saw a ",        // they: two people
        " gave ",             // indirect objects
        "The code on the door was ",
        " wrote a list: ",
        " were wet.",
        " is hungry.",
    ] {
        assert!(text.contains(cue), "no {cue:?}");
    }
}

#[test]
fn each_pronoun_fits_the_person_it_stands_for() {
    let (female, _) = names(Split::Train);
    let pronoun = |name: &str, subject: bool| match (female.contains(&name), subject) {
        (true, true) => "She",
        (false, true) => "He",
        (true, false) => "her",
        (false, false) => "him",
    };
    // "A met B at the P. She was happy to see him, so she gave him a G": B's pronoun, then A's.
    let met = regex::Regex::new(
        r"(\w+) met (\w+) at the \w+\. (\w+) was happy to see (\w+), so (\w+) gave (\w+) ",
    )
    .unwrap();
    let mut checked = 0;
    for story in stories(5, 400, Split::Train) {
        for c in met.captures_iter(&story) {
            let (a, b) = (&c[1], &c[2]);
            assert_eq!(&c[3], pronoun(b, true), "{story}");
            assert_eq!(&c[4], pronoun(a, false), "{story}");
            assert_eq!(c[5].to_string(), pronoun(b, true).to_lowercase(), "{story}");
            assert_eq!(&c[6], pronoun(a, false), "{story}");
            assert_ne!(
                female.contains(&a),
                female.contains(&b),
                "the cue decides: {story}"
            );
            checked += 1;
        }
    }
    assert!(checked > 50, "{checked}");
}

#[test]
fn an_indirect_object_prompt_ends_before_the_name_said_once() {
    for side in [Split::Train, Split::HeldOut] {
        let prompts = ioi_prompts(11, 200, side);
        for p in &prompts {
            let count = |name: &str| p.prompt.matches(name.trim()).count();
            assert_eq!(count(&p.answer), 1, "{}", p.prompt);
            assert_eq!(count(&p.other), 2, "{}", p.prompt);
            assert!(p.prompt.ends_with(" to"), "{}", p.prompt);
        }
        // Both orders of the pair (A and B, B and A) are there.
        let a_first = prompts
            .iter()
            .filter(|p| p.prompt.find(p.answer.trim()) < p.prompt.find(p.other.trim()))
            .count();
        assert!(a_first > 40 && a_first < 160, "{a_first} of 200");
    }
    // No held-out template's words in the training prompts.
    let train: Vec<_> = ioi_prompts(2, 500, Split::Train)
        .into_iter()
        .map(|p| p.prompt)
        .collect();
    let held: Vec<_> = ioi_prompts(2, 500, Split::HeldOut)
        .into_iter()
        .map(|p| p.prompt)
        .collect();
    assert!(!train
        .iter()
        .any(|p| p.contains("were working at") || p.contains("had a long day")));
    assert!(held
        .iter()
        .all(|p| p.contains("were working at") || p.contains("had a long day")));
}
