//! The story generator of the lecture models' training text (`train::stories`): seeded, each
//! kind of episode present, pronouns that fit their antecedents, indirect-object prompts
//! whose answer is the name said once, and evaluation pairs of names and templates never in
//! training.

use std::collections::HashSet;

use transformer_viz::analysis::antecedents::THINGS;
use transformer_viz::train::corpus::aside_sentences;
use transformer_viz::train::stories::{
    drill_stories, drill_stories_with_asides, ioi_prompts, names, pair_split, pronoun_cases,
    role_stories, stories, trade_of, DrillExtras, Split, ROLES, SHOWCASE_PAIRS, THING_DEEDS,
};

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
fn held_out_pairs_never_meet_in_training_and_every_name_is_trained() {
    let (female, male) = names();
    let all: Vec<&str> = female.iter().chain(male).copied().collect();
    for (a, b) in SHOWCASE_PAIRS {
        assert_eq!(pair_split(a, b), Split::HeldOut, "{a} and {b}");
        assert_eq!(pair_split(b, a), Split::HeldOut, "{b} and {a}");
    }
    let pairs: Vec<(&str, &str)> = all
        .iter()
        .enumerate()
        .flat_map(|(i, &a)| all[i + 1..].iter().map(move |&b| (a, b)))
        .collect();
    let held = pairs
        .iter()
        .filter(|(a, b)| pair_split(a, b) == Split::HeldOut)
        .count();
    let share = held as f64 / pairs.len() as f64;
    assert!(
        (0.12..0.28).contains(&share),
        "{held} of {} pairs held out",
        pairs.len()
    );
    // Each training story's cast is a training pair; every name is met in training.
    let training = stories(1, 2000, Split::Train);
    let mut seen = HashSet::new();
    let mut both = 0;
    for story in &training {
        let said = words(story);
        let cast: Vec<&str> = all.iter().copied().filter(|n| said.contains(*n)).collect();
        // A story may tell only one of its two people's episodes.
        assert!(cast.len() <= 2, "{story}");
        if let [a, b] = cast[..] {
            assert_eq!(pair_split(a, b), Split::Train, "{story}");
            both += 1;
        }
        seen.extend(cast);
    }
    assert_eq!(
        seen.len(),
        all.len(),
        "every name is in some training story"
    );
    assert!(
        both > 1000,
        "{both} of 2000 stories name both of their cast"
    );
    for story in stories(1, 200, Split::HeldOut) {
        let said = words(&story);
        let cast: Vec<&str> = all.iter().copied().filter(|n| said.contains(*n)).collect();
        assert!(cast.len() <= 2, "{story}");
        if let [a, b] = cast[..] {
            assert_eq!(pair_split(a, b), Split::HeldOut, "{story}");
        }
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
    let (female, _) = names();
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

#[test]
fn held_out_pronoun_sentences_point_each_pronoun_at_its_name_or_thing() {
    let (female, male) = names();
    let cases = pronoun_cases(4, 300);
    // Each case's first sentence.
    let opening_of = |text: &str| text[..text.find(". ").unwrap() + 1].to_string();
    assert_eq!(cases, pronoun_cases(4, 300), "seeded");
    let mut pronouns = 0;
    for case in &cases {
        let text = &case.text;
        // Held-out templates only, never a training one.
        assert!(
            text.contains(" called ") || text.contains(" found a "),
            "{text}"
        );
        assert!(!case.references.is_empty(), "{text}");
        // A sentence with no person in it comes first: no antecedent is the text's first word.
        let opening = opening_of(text);
        assert!(
            !female.iter().chain(male).any(|n| opening.contains(n)),
            "{text}"
        );
        for &(p, a) in &case.references {
            assert!(a < p, "the antecedent comes first: {text}");
            assert!(a > opening.len(), "an antecedent after the opening: {text}");
            let word = |at: usize| {
                text[at..]
                    .split(|c: char| !c.is_alphanumeric())
                    .next()
                    .unwrap()
                    .to_string()
            };
            let (pronoun, antecedent) = (word(p).to_lowercase(), word(a));
            let fits = match pronoun.as_str() {
                "she" | "her" => female.contains(&antecedent.as_str()),
                "he" | "him" => male.contains(&antecedent.as_str()),
                "it" => THINGS.iter().any(|(one, _)| *one == antecedent),
                other => panic!("pronoun {other:?} in {text}"),
            };
            assert!(fits, "{pronoun} -> {antecedent} in {text}");
            pronouns += 1;
        }
    }
    assert!(pronouns > 400, "{pronouns}");
    // Both held-out templates are there.
    assert!(cases.iter().any(|c| c.text.contains(" called ")));
    assert!(cases.iter().any(|c| c.text.contains(" found a ")));
    // No training story uses them, nor their openings.
    let training = [
        stories(6, 500, Split::Train),
        role_stories(6, 500),
        drill_stories(6, 500, &[], DrillExtras::default()),
    ]
    .concat()
    .join(" ");
    assert!(!training.contains(" called ") && !training.contains(" found a "));
    let openings: std::collections::BTreeSet<String> =
        cases.iter().map(|c| opening_of(&c.text)).collect();
    assert!(openings.len() >= 3, "{openings:?}");
    for opening in openings {
        assert!(!training.contains(&opening), "{opening}");
    }
}

/// The trade's deed (past, or -ing) of the person `pronoun` stands for, among `cast` (name,
/// trade): the one whose gender the pronoun names.
fn deed_of(cast: &[(&str, &str)], pronoun: &str, ing: bool) -> String {
    let (female, _) = names();
    let wants_female = matches!(pronoun, "She" | "she" | "her");
    let (_, trade) = cast
        .iter()
        .find(|(name, _)| female.contains(name) == wants_female)
        .expect("a person of the pronoun's gender");
    let (_, past, doing) = ROLES.iter().find(|(t, _, _)| t == trade).unwrap();
    (if ing { doing } else { past }).to_string()
}

#[test]
fn in_a_role_story_each_pronoun_is_followed_by_the_deed_of_the_person_it_stands_for() {
    let stories = role_stories(3, 600);
    assert_eq!(stories, role_stories(3, 600), "seeded");
    assert_ne!(stories, role_stories(4, 600));
    let met =
        regex::Regex::new(r"The (\w+) (\w+) met the (\w+) (\w+) at the \w+\. ([^.]+)\.").unwrap();
    let watched = regex::Regex::new(r"^(She|He) watched (him|her) (.+)$").unwrap();
    let then = regex::Regex::new(r"^(She|He) (.+), and then (she|he) (.+)$").unwrap();
    let saw = regex::Regex::new(r"^\w+ saw (him|her) (.+), and (she|he) (.+)$").unwrap();
    let thing =
        regex::Regex::new(r"a \w+ (\w+)(?: at the \w+)?\. (?:She|He) [^.]*it (\w+(?: \w+)?)\.")
            .unwrap();
    let (mut pronouns, mut things) = (0, 0);
    for story in &stories {
        for c in met.captures_iter(story) {
            let cast = [(&c[2], &c[1]), (&c[4], &c[3])];
            // Each name keeps its own trade in every story.
            for (name, trade) in cast {
                assert_eq!(trade_of(name).unwrap().0, trade, "{name} in {story}");
            }
            let rest = &c[5];
            let checks: Vec<(String, String, bool)> = if let Some(w) = watched.captures(rest) {
                vec![(w[2].to_string(), w[3].to_string(), true)]
            } else if let Some(t) = then.captures(rest) {
                vec![
                    (t[1].to_string(), t[2].to_string(), false),
                    (t[3].to_string(), t[4].to_string(), false),
                ]
            } else if let Some(s) = saw.captures(rest) {
                vec![
                    (s[1].to_string(), s[2].to_string(), true),
                    (s[3].to_string(), s[4].to_string(), false),
                ]
            } else {
                // Two of one gender: named, not a pronoun.
                assert!(
                    !rest.starts_with("She ") && !rest.starts_with("He "),
                    "{story}"
                );
                vec![]
            };
            for (pronoun, deed, ing) in checks {
                assert_eq!(deed, deed_of(&cast, &pronoun, ing), "{pronoun} in {story}");
                pronouns += 1;
            }
        }
        for c in thing.captures_iter(story) {
            let deed = THING_DEEDS
                .iter()
                .find(|(t, _)| *t == &c[1])
                .map(|(_, d)| *d);
            assert_eq!(deed, Some(&c[2]), "it after the {} in {story}", &c[1]);
            things += 1;
        }
    }
    assert!(
        pronouns > 500 && things > 100,
        "{pronouns} pronouns, {things} things"
    );
}

/// `text` holds none of the held-out templates' own words (`IOI` and the held-out pronoun
/// sentences), nor any of `more`.
fn assert_no_held_out_template(text: &str, more: &[&str]) {
    let own = [
        " were working at the ",
        " had a long day at the ",
        " called ",
        " told ",
        " found a ",
        " showed it to ",
    ];
    for held_out in own.iter().chain(more) {
        assert!(
            !text.contains(held_out),
            "{held_out:?} is a held-out template's"
        );
    }
}

#[test]
fn role_stories_use_training_pairs_and_no_held_out_template() {
    let (female, male) = names();
    let all: Vec<&str> = female.iter().chain(male).copied().collect();
    let stories = role_stories(5, 1000);
    assert_no_held_out_template(&stories.join("\n"), &[]);
    let mut drills = 0;
    for story in &stories {
        for sentence in story.split(". ") {
            let said: Vec<&str> = all
                .iter()
                .copied()
                .filter(|n| words(sentence).contains(*n))
                .collect();
            if let [a, b] = said[..] {
                assert_eq!(pair_split(a, b), Split::Train, "{a} and {b}: {story}");
            }
        }
        let cast = all.iter().filter(|n| words(story).contains(**n)).count();
        drills += (cast > 2) as usize;
    }
    // A third are drills, each sentence with a pair of its own.
    assert!((250..420).contains(&drills), "{drills} drills of 1000");
}

/// The drill text: seeded; half of its stories are indirect-object sentences, each with a
/// training pair of its own, ending on the name said once, in many shapes, none of them a
/// held-out template's; the other half pronoun drills (role episodes and, one in three, a
/// person and things).
#[test]
fn drill_stories_end_each_sentence_on_the_name_said_once_and_hold_out_the_held_out_templates() {
    let (female, male) = names();
    let all: Vec<&str> = female.iter().chain(male).copied().collect();
    // Words to put before a pair, the held-out templates' own among them.
    let before: Vec<String> = ["whale", "While", "ship", "working", "Meanwhile", "harpoon"]
        .map(String::from)
        .to_vec();
    let extras = DrillExtras {
        things: true,
        word_first: true,
        verbs: true,
        ..DrillExtras::default()
    };
    let stories = drill_stories(11, 1000, &before, extras);
    assert_eq!(stories, drill_stories(11, 1000, &before, extras), "seeded");
    assert_ne!(stories, drill_stories(12, 1000, &before, extras));
    assert_ne!(stories, drill_stories(11, 1000, &[], extras));
    let text = stories.join("\n");
    assert!(text.contains("whale ") && text.contains("harpoon "));
    assert_no_held_out_template(&text, &["While ", "while ", "working "]);
    let (mut drills, mut sentences, mut pronoun_drills, mut pair_first) = (0, 0, 0, 0);
    let mut word_first = 0;
    let mut openings = HashSet::new();
    let met = regex::Regex::new(r"(\w+) met (\w+) at the \w+\. ([^.]+)\.").unwrap();
    let then = regex::Regex::new(r"^(She|He) (.+), and then (she|he) (.+)$").unwrap();
    // One thing in the singular and two of another kind, either first.
    let thing = regex::Regex::new(
        r"(\w+) (?:picked up|had) (?:two (\w+) and )?a \w+ (\w+)(?: and two (\w+))?(?: at the \w+)?\. (She|He) [^.]*it (\w+(?: \w+)?)\.",
    )
    .unwrap();
    let (mut role_episodes, mut thing_episodes, mut other_first) = (0, 0, 0);
    for story in &stories {
        // Where each "... to Name." ends.
        let mut ends: Vec<usize> = all
            .iter()
            .flat_map(|n| {
                let end = format!(" to {n}.");
                story
                    .match_indices(&end)
                    .map(move |(at, m)| at + m.len())
                    .collect::<Vec<_>>()
            })
            .collect();
        ends.sort();
        if ends.last() != Some(&story.len()) {
            // A pronoun drill: three to five episodes, their trades not said. Most are role
            // episodes, a woman and a man of their own in each, each pronoun followed by its
            // person's own deed; some are one person and a thing, "it" followed by the
            // thing's own deed.
            let intros: Vec<_> = met.captures_iter(story).collect();
            let with_things: Vec<_> = thing.captures_iter(story).collect();
            for t in &with_things {
                let (name, object) = (&t[1], &t[3]);
                let deed = THING_DEEDS.iter().find(|(o, _)| *o == object).unwrap().1;
                assert_eq!(&t[6], deed, "{story}");
                let she = female.contains(&name);
                assert_eq!(&t[5], if she { "She" } else { "He" }, "{story}");
                // Exactly one of the two places holds the other things, of another kind.
                let others = t.get(2).or(t.get(4)).expect("two other things").as_str();
                assert!(t.get(2).is_none() || t.get(4).is_none(), "{story}");
                let (one, _) = THINGS.iter().find(|(_, many)| *many == others).unwrap();
                assert_ne!(one, &object, "{story}");
                other_first += t.get(2).is_some() as usize;
                thing_episodes += 1;
            }
            assert!(
                (3..=5).contains(&(intros.len() + with_things.len())),
                "{story}"
            );
            assert!(!story.contains("The "), "no trade said: {story}");
            let pairs: HashSet<(&str, &str)> = intros
                .iter()
                .map(|c| {
                    let (a, b) = (c.get(1).unwrap().as_str(), c.get(2).unwrap().as_str());
                    assert_ne!(female.contains(&a), female.contains(&b), "{story}");
                    assert_eq!(pair_split(a, b), Split::Train, "{story}");
                    let cast = [a, b].map(|n| (n, trade_of(n).unwrap().0));
                    let rest = c.get(3).unwrap().as_str();
                    if let Some(d) = then.captures(rest) {
                        assert_eq!(d[2], deed_of(&cast, &d[1], false), "{story}");
                        assert_eq!(d[4], deed_of(&cast, &d[3], false), "{story}");
                    }
                    (a, b)
                })
                .collect();
            assert!(pairs.len() >= intros.len().min(2), "{story}");
            role_episodes += intros.len();
            pronoun_drills += 1;
            continue;
        }
        let mut from = 0;
        let mut pieces = Vec::new();
        for end in ends {
            pieces.push(story[from..end].trim());
            from = end;
        }
        let said = |piece: &str, name: &str| {
            piece
                .split(|c: char| !c.is_alphanumeric())
                .filter(|w| *w == name)
                .count()
        };
        // A drill is three to five sentences, each with a pair of its own; a role story keeps
        // its cast of two throughout.
        let casts: HashSet<Vec<&str>> = pieces
            .iter()
            .map(|p| all.iter().copied().filter(|n| said(p, n) > 0).collect())
            .collect();
        if pieces.len() < 3 || casts.len() < 2 {
            continue;
        }
        drills += 1;
        // Half open the story with the pair, where the first name has no space before it.
        let opener = story.split(' ').next().unwrap();
        if all.contains(&opener) && story[opener.len()..].starts_with(" and ") {
            pair_first += 1;
        }
        // A quarter open with a word of `before`, capitalised, right before the pair.
        let second = story.split(' ').nth(1).unwrap_or_default();
        if ["Whale", "Ship", "Harpoon"].contains(&opener) && all.contains(&second) {
            word_first += 1;
        }
        for piece in pieces {
            let answer = piece.trim_end_matches('.').rsplit(' ').next().unwrap();
            let other = *all
                .iter()
                .find(|n| **n != answer && said(piece, n) > 0)
                .unwrap();
            assert_eq!(
                said(piece, answer),
                2,
                "{answer} said once before the end: {piece}"
            );
            assert_eq!(said(piece, other), 2, "{other} said twice: {piece}");
            assert_eq!(pair_split(answer, other), Split::Train, "{piece}");
            openings.insert(
                piece
                    .split(answer)
                    .next()
                    .unwrap()
                    .split(other)
                    .next()
                    .unwrap()
                    .to_string(),
            );
            sentences += 1;
        }
    }
    // Half are indirect-object drills, half pronoun drills; one pronoun episode in three is a
    // person and things.
    assert!((430..570).contains(&drills), "{drills} drills of 1000");
    let episodes = role_episodes + thing_episodes;
    assert!(
        (episodes * 27 / 100..episodes * 40 / 100).contains(&thing_episodes),
        "{thing_episodes} of {episodes} pronoun-drill episodes with things"
    );
    assert!(
        (thing_episodes * 2 / 5..thing_episodes * 3 / 5).contains(&other_first),
        "{other_first} of {thing_episodes} with the other things first"
    );
    assert_eq!(drills + pronoun_drills, 1000);
    assert!(
        (drills * 2 / 5..drills * 3 / 5 + drills / 8).contains(&pair_first),
        "{pair_first} of {drills} drills open with the pair"
    );
    assert!(
        (drills / 6..drills / 3).contains(&word_first),
        "{word_first} of {drills} drills open with a word of the corpus"
    );
    assert!(
        sentences > 3 * drills,
        "{sentences} sentences in {drills} drills"
    );
    // Many shapes: the words before the first name.
    assert!(
        openings.len() >= 100,
        "{} openings: {openings:?}",
        openings.len()
    );
    // The verbs before "him" / "her" and the other person's deed.
    let watching = regex::Regex::new(r"(?:^|\. )\w+ (\w+) (?:him|her) \w+ing\b").unwrap();
    let verbs = |stories: &[String]| -> HashSet<String> {
        stories
            .iter()
            .flat_map(|s| watching.captures_iter(s).map(|c| c[1].to_string()))
            .collect()
    };
    let many = verbs(&stories);
    assert!(many.len() >= 8, "{many:?}");
    assert!(many.contains("watched") && many.contains("saw"), "{many:?}");
    // None is a verb of the held-out pronoun templates.
    for held_out in ["called", "told", "laughed", "found", "showed"] {
        assert!(!many.contains(held_out), "{held_out}");
    }
    // Without the extras, no things, no word of the corpus first, only "watched" and "saw":
    // the committed drills.
    let plain = drill_stories(11, 1000, &before, DrillExtras::default());
    let two: HashSet<String> = ["watched", "saw"].map(String::from).into();
    assert_eq!(verbs(&plain), two);
    assert!(plain.iter().all(|s| !thing.is_match(s)), "no things");
    assert!(plain.iter().all(|s| !["Whale ", "Ship ", "Harpoon "]
        .iter()
        .any(|w| s.starts_with(w))));
}

/// With `DrillExtras::solo` one pronoun-drill episode in three is one person alone: their name,
/// then "he" / "she" of their gender and their own trade's deed.
#[test]
fn solo_drill_episodes_name_one_person_then_their_pronoun_and_deed() {
    let (female, _) = names();
    let extras = DrillExtras {
        solo: true,
        ..DrillExtras::default()
    };
    let stories = drill_stories(5, 600, &[], extras);
    let solo = regex::Regex::new(
        r"(?:^|\. )(\w+) (?:went to|walked to|was at|stopped at) the \w+\. (She|He) ([^.]+)\.",
    )
    .unwrap();
    let met = regex::Regex::new(r"\w+ met \w+ at the \w+\.").unwrap();
    let (mut solos, mut pairs) = (0, 0);
    for story in &stories {
        for c in solo.captures_iter(story) {
            let name = &c[1];
            let she = female.contains(&name);
            assert_eq!(&c[2], if she { "She" } else { "He" }, "{story}");
            let (_, deed, _) = trade_of(name).unwrap();
            assert_eq!(&c[3], deed, "{story}");
            solos += 1;
        }
        pairs += met.find_iter(story).count();
    }
    let episodes = solos + pairs;
    assert!(
        (episodes * 27 / 100..episodes * 40 / 100).contains(&solos),
        "{solos} of {episodes} pronoun-drill episodes alone"
    );
    // Off, none.
    let plain = drill_stories(5, 600, &[], DrillExtras::default());
    assert!(plain.iter().all(|s| !solo.is_match(s)));
}

/// With `watched_things`, about one pronoun-drill episode in four is a person, a thing among two
/// others of another kind, and then "it" after a verb of watching, followed by the deed of that
/// one thing: the "it" is an object, as in the held-out "showed it to", and its deed pays for
/// finding it.
#[test]
fn watched_thing_drills_put_it_after_a_verb_of_watching_and_its_deed_after_it() {
    let extras = DrillExtras {
        watched_things: true,
        verbs: true,
        ..DrillExtras::default()
    };
    let stories = drill_stories(5, 600, &[], extras);
    let watched = regex::Regex::new(
        r"(?:^|\. )(\w+) picked up (?:a \w+ (\w+) and two (\w+)|two (\w+) and a \w+ (\w+))\. (She|He) (watched|saw|heard|noticed|spotted) it ([^.]+)\.",
    )
    .unwrap();
    let met = regex::Regex::new(r"\w+ met \w+ at the \w+\.").unwrap();
    let (female, _) = names();
    let (mut seen, mut pairs, mut verbs) = (0, 0, std::collections::BTreeSet::new());
    for story in &stories {
        for c in watched.captures_iter(story) {
            let thing = c.get(2).or(c.get(5)).unwrap().as_str();
            let others = c.get(3).or(c.get(4)).unwrap().as_str();
            let at = THING_DEEDS.iter().position(|(t, _)| *t == thing).unwrap();
            assert!(!others.starts_with(thing), "{story}");
            let she = female.contains(&&c[1]);
            assert_eq!(&c[6], if she { "She" } else { "He" }, "{story}");
            // The deed as a watcher sees it: the thing's own deed, its first word in -ing.
            let deed = THING_DEEDS[at].1;
            let first = deed.split(' ').next().unwrap();
            let doing = &c[8];
            assert!(
                doing.ends_with(&deed[first.len()..])
                    && doing.split(' ').next().unwrap().ends_with("ing"),
                "{doing:?} is not what a {thing} does ({deed:?}): {story}"
            );
            verbs.insert(c[7].to_string());
            seen += 1;
        }
        pairs += met.find_iter(story).count();
    }
    let episodes = seen + pairs;
    assert!(
        (episodes * 18 / 100..episodes * 32 / 100).contains(&seen),
        "{seen} of {episodes} pronoun-drill episodes watch a thing"
    );
    assert_eq!(verbs.len(), 5, "{verbs:?}");
    let plain = drill_stories(5, 600, &[], DrillExtras::default());
    assert!(plain.iter().all(|s| !watched.is_match(s)));
}

/// Whether `test` holds for some name of the lists.
fn any_name(test: impl Fn(&str) -> bool) -> bool {
    let (female, male) = names();
    female.iter().chain(male.iter()).any(|n| test(n))
}

/// Whether `story` ends on a name of the lists after " to ", as an indirect-object drill does.
fn ends_on_a_name(story: &str) -> bool {
    any_name(|n| story.ends_with(&format!(" to {n}.")))
}

/// Whether `story` opens with a name of the lists and "and": a pair-first drill.
fn opens_with_a_pair(story: &str) -> bool {
    any_name(|n| story.starts_with(&format!("{n} and ")))
}

/// With `ioi_only` every drill story is indirect-object sentences, each ending on the name
/// said once, as many as without it, and about half of them open with the pair itself; off,
/// about half the stories are pronoun drills.
#[test]
fn ioi_only_drills_are_indirect_object_stories_alone() {
    let extras = DrillExtras {
        ioi_only: true,
        ..DrillExtras::default()
    };
    let stories = drill_stories(5, 600, &[], extras);
    assert_eq!(stories.len(), 600);
    let met = regex::Regex::new(r"\w+ met \w+ at the \w+\.").unwrap();
    for story in &stories {
        assert!(ends_on_a_name(story) && !met.is_match(story), "{story}");
    }
    let opening_with_the_pair = stories.iter().filter(|s| opens_with_a_pair(s)).count();
    assert!(
        (240..360).contains(&opening_with_the_pair),
        "{opening_with_the_pair} of 600 open with the pair"
    );
    let plain = drill_stories(5, 600, &[], DrillExtras::default());
    let pronoun_drills = plain.iter().filter(|s| !ends_on_a_name(s)).count();
    assert!(
        (240..360).contains(&pronoun_drills),
        "{pronoun_drills} of 600 pronoun drills"
    );
}

/// With `placeless` some indirect-object drills' pairs do something with no place said ("ate
/// lunch", "went home"), none of them the held-out templates' "had ..." or "working"; off,
/// every pair is at a place.
#[test]
fn placeless_drills_let_a_pair_do_something_with_no_place() {
    let placeless = regex::Regex::new(
        r"\b(?:went home|ate lunch[,.]|played all morning|talked for hours|fed the ducks|missed the bus)",
    )
    .unwrap();
    let extras = DrillExtras {
        ioi_only: true,
        placeless: true,
        ..DrillExtras::default()
    };
    let stories = drill_stories(5, 600, &[], extras);
    let with = stories.iter().filter(|s| placeless.is_match(s)).count();
    assert!(
        with > 100,
        "{with} of 600 stories with a pair's doing without a place"
    );
    let text = stories.join("\n");
    for word in [" had ", "working"] {
        assert!(!text.contains(word), "{word:?} in the drills");
    }
    let plain = drill_stories(
        5,
        600,
        &[],
        DrillExtras {
            ioi_only: true,
            ..DrillExtras::default()
        },
    );
    assert!(plain.iter().all(|s| !placeless.is_match(s)));
}

/// The corpus sentences a drill may put between its pair and its action: a common word first,
/// no capital after it (no other name said once), no word of the held-out templates', each
/// once; with `corpus_asides` drills carry them, the pair-first ones too, and still end on the
/// name said once.
#[test]
fn corpus_asides_are_plain_sentences_put_between_a_drills_pair_and_its_action() {
    let documents: Vec<String> = [
        "The ship sailed at noon. Ahab stood on the deck. It was cold, and the sea was grey.",
        "They talked while working. The whale rose again! Mary and John went home.",
        "The ship sailed at noon. A bird sat on the mast for a long day. There it is.",
    ]
    .map(String::from)
    .to_vec();
    assert_eq!(
        aside_sentences(&documents),
        [
            "The ship sailed at noon.",
            "It was cold, and the sea was grey.",
            "The whale rose again!",
            "There it is.",
        ]
    );
    let asides: Vec<String> = ["The sea was grey and cold.", "It rained all night long."]
        .map(String::from)
        .to_vec();
    let extras = DrillExtras {
        ioi_only: true,
        corpus_asides: true,
        ..DrillExtras::default()
    };
    let stories = drill_stories_with_asides(5, 400, &[], &asides, extras);
    assert_eq!(
        stories,
        drill_stories_with_asides(5, 400, &[], &asides, extras)
    );
    let with = |aside: &str| stories.iter().filter(|s| s.contains(aside)).count();
    assert!(with(asides[0].as_str()) > 40 && with(asides[1].as_str()) > 40);
    // Right after a pair that opens the story, and each followed by the repeated name.
    let pair_first = stories
        .iter()
        .filter(|s| {
            opens_with_a_pair(s)
                && s.split(". ")
                    .nth(1)
                    .is_some_and(|t| asides.iter().any(|a| a.starts_with(t)))
        })
        .count();
    assert!(
        pair_first > 10,
        "{pair_first} pair-first drills go on with an aside"
    );
    for story in &stories {
        assert!(ends_on_a_name(story), "{story}");
    }
    // Off, or with no sentences, none.
    let off = drill_stories_with_asides(
        5,
        400,
        &[],
        &asides,
        DrillExtras {
            corpus_asides: false,
            ..extras
        },
    );
    assert!(off.iter().all(|s| !s.contains("grey")));
    assert_eq!(
        drill_stories_with_asides(5, 400, &[], &[], extras),
        drill_stories(
            5,
            400,
            &[],
            DrillExtras {
                corpus_asides: false,
                ..extras
            }
        )
    );
}
