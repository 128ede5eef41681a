//! A seeded generator of short, plain stories for the lecture models' training text. Public
//! domain novels teach a small model English, but they rarely put the same name twice in a
//! short window, and a model only learns a behaviour its data rewards. Each story here is a few
//! episodes about one cast of characters, and each kind of episode rewards one behaviour that
//! the notes and the interpretability literature name:
//!
//! - **pronouns**: a character is introduced by name and referred to again as he, she, they or
//!   it, with the cue that decides which (the name's gender, one person or two, a thing);
//! - **indirect objects**: "When Mary and John went to the store, John gave a drink to Mary."
//!   The answer is the name that is not repeated (the IOI task, Wang et al., 2022);
//! - **repeated lists and sequences**: a list of things or digits said twice, so the second
//!   time can be copied from the first (induction heads, Olsson et al., 2022);
//! - **agreement across a distance**: a subject, a phrase whose noun has the other number, then
//!   the verb that agrees with the subject ("The keys to the old cabinet are ...").
//!
//! Evaluation must be on what training never saw, yet a model can only know that Mary takes
//! "she" if it met Mary in training. So every name is in the training stories, but every pair
//! of names and every sentence template has a fixed side (`Split`): a held-out pair never meets
//! in a training story, and `stories(.., Split::HeldOut)` casts only held-out pairs and uses
//! only held-out templates. The same seed gives the same stories on every machine (ChaCha8).
//!
//! `role_stories` are the text of a second phase of training (`train --role-stories`): in
//! `stories` nothing after a pronoun depends on whom it stands for, so no head is rewarded for
//! looking from the pronoun to its antecedent. In a role story each name keeps one trade in
//! every story (`trade_of`; "the baker Mary"), and the word right after each pronoun is that
//! person's own deed ("She made bread", "He watched her making bread"): a model predicts it
//! best by looking from the pronoun at the name that agrees with it. They add
//! indirect-object sentences in templates of their own, still of the training side, and a
//! third of them are drills of such sentences, each with a pair of its own. `drill_stories`
//! are the drill text (`train --drills`): pronoun drills (role episodes whose trades are not
//! said, so only the name tells the deed), and indirect-object sentences put together from
//! many openings and actions, so the rule is learned and not a template.

use rand_chacha::ChaCha8Rng;

use crate::analysis::antecedents::{ANIMALS, FEMALE_NAMES as FEMALE, MALE_NAMES as MALE, THINGS};
use rand_core::{RngCore, SeedableRng};

/// Which side of the fixed train / held-out division a story's names and templates are from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Split {
    Train,
    HeldOut,
}

/// About one pair of names in `HELD_OUT_EVERY` is held out of training (`pair_split`).
pub const HELD_OUT_EVERY: usize = 5;

/// Pairs the page and the tests show off: held out, so what the page shows on them is the
/// model generalising, not remembering.
pub const SHOWCASE_PAIRS: [(&str, &str); 2] = [("Mary", "John"), ("Anna", "Tom")];

const PLACES: &[&str] = &[
    "store", "park", "school", "market", "garden", "station", "beach", "library", "river", "farm",
    "kitchen", "museum", "harbour", "bakery", "forest", "village",
];
const GIFTS: &[&str] = &[
    "a drink",
    "a book",
    "an apple",
    "a letter",
    "a pencil",
    "a cake",
    "a ticket",
    "a flower",
    "a coin",
    "a map",
    "a cup",
    "a hat",
    "a key",
    "a bag",
    "an orange",
    "a lamp",
];
const COLOURS: &[&str] = &[
    "red", "blue", "green", "yellow", "small", "big", "old", "new",
];
const ITEMS: &[&str] = &[
    "bread", "milk", "eggs", "apples", "rice", "cheese", "pears", "soap", "tea", "honey",
    "carrots", "salt", "beans", "plums", "butter", "nuts",
];
/// An indirect-object template: `{A}` and `{B}` are introduced, `{B}` is said again, and the
/// sentence ends on the gift's receiver, `{A}`.
struct IoiTemplate {
    text: &'static str,
    split: Split,
}

const IOI: &[IoiTemplate] = &[
    IoiTemplate {
        text: "When {A} and {B} went to the {place}, {B} gave {gift} to {A}.",
        split: Split::Train,
    },
    IoiTemplate {
        text: "After {A} and {B} arrived at the {place}, {B} handed {gift} to {A}.",
        split: Split::Train,
    },
    IoiTemplate {
        text: "{A} and {B} were at the {place}. {B} gave {gift} to {A}.",
        split: Split::Train,
    },
    IoiTemplate {
        text: "Then {A} and {B} walked to the {place}, and {B} brought {gift} to {A}.",
        split: Split::Train,
    },
    IoiTemplate {
        text: "At the {place}, {A} and {B} sat down. {B} passed {gift} to {A}.",
        split: Split::Train,
    },
    IoiTemplate {
        text: "While {A} and {B} were working at the {place}, {B} gave {gift} to {A}.",
        split: Split::HeldOut,
    },
    IoiTemplate {
        text: "{A} and {B} had a long day at the {place}, so {B} gave {gift} to {A}.",
        split: Split::HeldOut,
    },
];

/// Trades for `role_stories`: the trade, its deed after "he" / "she" (the past), and after
/// "watched him" / "watched her" (the -ing form). Each deed's first word is its trade's own, and
/// one token of the lecture vocabulary for the past: the word right after "she" tells the
/// trades apart by itself, not only after a shared first piece (`b|aked`, `b|uilt`).
pub const ROLES: &[(&str, &str, &str)] = &[
    ("baker", "made bread", "making bread"),
    ("farmer", "kept the cows", "feeding the cows"),
    ("fisher", "carried a net", "carrying a net"),
    ("painter", "hung a painting", "painting a wall"),
    ("singer", "won a prize", "singing a song"),
    ("teacher", "read a story", "reading a story"),
    ("doctor", "helped a sick child", "helping a sick child"),
    ("cook", "fixed dinner", "cooking dinner"),
    ("gardener", "turned the soil", "turning the soil"),
    ("driver", "took the bus home", "taking the bus home"),
    ("sailor", "stood on the deck", "standing on the deck"),
    ("writer", "wrote a letter", "writing a letter"),
];

/// What each thing does in `role_stories` after "it": the word depends on the thing.
pub const THING_DEEDS: &[(&str, &str)] = &[
    ("ball", "rolled away"),
    ("kite", "flew high"),
    ("box", "opened"),
    ("boat", "floated"),
    ("basket", "tipped over"),
    ("drum", "boomed"),
    ("clock", "ticked"),
    ("bell", "rang"),
    ("bike", "squeaked"),
    ("jar", "cracked"),
    ("glass", "shone"),
    ("brush", "dripped"),
];

/// `THING_DEEDS`' deeds as a watcher sees them, in the same order: "she watched it rolling
/// away" (`DrillExtras::watched_things`).
const THING_DOINGS: [&str; 12] = [
    "rolling away",
    "flying high",
    "opening",
    "floating",
    "tipping over",
    "booming",
    "ticking",
    "ringing",
    "squeaking",
    "cracking",
    "shining",
    "dripping",
];
const _: () = assert!(THING_DOINGS.len() == THING_DEEDS.len());

/// Indirect-object templates of `role_stories` only (the training side): other verbs and
/// openings than `IOI`'s, so the answer cannot be tied to one sentence's shape.
const ROLE_IOI: &[&str] = &[
    "{A} and {B} went to the {place}, and {B} gave {gift} to {A}.",
    "Later {A} and {B} met at the {place}. {B} sold {gift} to {A}.",
    "On Sunday {A} and {B} went to the {place}. There {B} threw {gift} to {A}.",
    "{A} and {B} stayed at the {place} all day. In the evening {B} sent {gift} to {A}.",
    "Before {A} and {B} left the {place}, {B} showed {gift} to {A}.",
];

/// The parts `Generator::drill_opening` puts a drill sentence's opening together from, `{P}`
/// the pair ("A and B" in either order): some thousands of openings, so that what the model
/// learns is the rule (the name said once), not where a template puts the names. None is a
/// held-out template's: no "while", "working", "a long day".
const DRILL_TIMES: &[&str] = &[
    "On Monday",
    "In the morning",
    "Last week",
    "After lunch",
    "Before dinner",
    "One day",
    "That night",
    "Later that day",
    "At noon",
    "In the spring",
    "On a sunny day",
    "Early one morning",
    "Yesterday",
    "Then",
    "Later",
];
const DRILL_CONJUNCTIONS: &[&str] = &[
    "When",
    "After",
    "Before",
    "Once",
    "Because",
    "As soon as",
    "Since",
    "Just after",
    "Right before",
    "Every time",
    "The day",
];
/// Words said right before the pair: a name must be found as a name whatever token comes
/// before it (the committed models missed the first name after an opening they had not met,
/// such as "While", two tokens).
const DRILL_MANNERS: &[&str] = &[
    "Tired",
    "Happy",
    "Hungry",
    "Sleepy",
    "Excited",
    "Cold",
    "Wet",
    "Late",
    "Together",
    "Quietly",
    "Slowly",
    "Suddenly",
    "Finally",
    "Again",
    "Today",
    "Tonight",
    "Afterwards",
    "Soon",
    "Now",
    "Still",
    "Anyway",
    "Also",
    "Sadly",
    "Luckily",
    "Happily",
    "Quickly",
    "Carefully",
    "Laughing",
    "Smiling",
    "Singing",
    "Hand in hand",
    "Side by side",
    "Arm in arm",
    "Once again",
    "At last",
    "Of course",
    "By noon",
    "By then",
    "Soon after",
    "Far from home",
    "Without a word",
    "Full of joy",
];
const DRILL_DOINGS: &[&str] = &[
    "went to the {place}",
    "were at the {place}",
    "got to the {place}",
    "walked to the {place}",
    "arrived at the {place}",
    "played at the {place}",
    "sat down in the {place}",
    "stopped at the {place}",
    "looked around the {place}",
    "cleaned the {place}",
    "left the {place}",
    "visited the {place}",
    "waited at the {place}",
    "ate lunch at the {place}",
    "ran to the {place} in the rain",
];

/// What a drill pair may do besides `DRILL_DOINGS`, with no place said
/// (`DrillExtras::placeless`): with a place in every opening, the indirect object was missed
/// more often after "... went home, so" or "... had lunch, so" than after "... were at the
/// park, so". None says "had", "day", "while" or "working", the held-out templates' words.
const PLACELESS_DOINGS: &[&str] = &[
    "went home",
    "ate lunch",
    "drank some tea",
    "played all morning",
    "sang a song",
    "talked for hours",
    "cooked dinner",
    "got up early",
    "read some books",
    "made a cake",
    "fed the ducks",
    "took a walk",
    "missed the bus",
    "finished their chores",
    "laughed a lot",
    "painted a fence",
    "built a snowman",
    "cleaned up together",
];

/// The verbs a pronoun drill may put before "him" / "her" and the person's -ing deed
/// (`DrillExtras::verbs`): with only "watched" and "saw" a head learns to find the object's
/// name after those two words alone. None is a held-out template's word.
const WATCHING_VERBS: &[&str] = &[
    "watched", "saw", "heard", "noticed", "spotted", "passed", "joined", "followed", "caught",
    "left",
];

/// What `{B}` does to `{A}` at the end of a drill sentence.
const DRILL_ACTIONS: &[&str] = &[
    "gave {gift} to",
    "handed {gift} to",
    "brought {gift} to",
    "passed {gift} to",
    "sold {gift} to",
    "threw {gift} to",
    "sent {gift} to",
    "lent {gift} to",
    "offered {gift} to",
    "gave {gift} back to",
    "read a story to",
    "said goodbye to",
    "waved to",
    "wrote a letter to",
    "sang a song to",
];

/// Now and then between a drill sentence's opening (one that ends a sentence) and its action.
const DRILL_ASIDES: &[&str] = &[
    "They talked for a while.",
    "The sun was warm.",
    "It was late.",
    "They were both tired.",
];

const DRILL_ADVERBS: &[&str] = &["quickly", "happily", "quietly", "soon", "kindly"];

// Pronoun episodes (`Generator::render` fills the slots). Training uses the first three, the
// held-out sentences the last two: a model that resolves them has learned the cue, not the
// sentence.
const PRONOUN_THING: &str =
    "{A} had a {colour} {thing}. {A.Subj} gave {it} to the {animal}, and the {animal} liked {it}.";
const PRONOUN_TWO: &str =
    "{A} met {B} at the {place}. {B.Subj} was happy to see {A.obj}, so {B.subj} gave {A.obj} {gift}.";
const PRONOUN_PAIR: &str =
    "{A} and {B} went to the {place}. They saw a {animal} there, and they followed it home.";
const HELD_OUT_PRONOUN_TWO: &str =
    "{A} called {B} from the {place}. {B.Subj} told {A.obj} about the {animal}, and {A.subj} laughed.";
const HELD_OUT_PRONOUN_THING: &str =
    "{A} found a {colour} {thing} at the {place}. {A.Subj} showed {it} to {B}.";

/// The sentence each held-out pronoun case opens with, one with no person in it: a name at the
/// very start of a text is cut into letters (`M|ary`, no space before it) and sits right after
/// the start token, where many heads rest whatever the sentence; an antecedent there would
/// reward a head that only looks at the text's first word. No training text says these.
const HELD_OUT_OPENINGS: &[&str] = &[
    "The morning was grey and cold.",
    "Rain fell on the roofs all night.",
    "The town was quiet that week.",
    "A strong wind blew from the hills.",
];

/// A text and, for each pronoun in it, the byte where the pronoun starts and the byte where
/// the name or noun it stands for was first said.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Rendered {
    pub text: String,
    pub references: Vec<(usize, usize)>,
}

/// `count` held-out pronoun sentences (held-out pairs of names, held-out templates), each
/// after a held-out opening sentence (`HELD_OUT_OPENINGS`) and with its pronouns and their
/// antecedents (`Rendered`).
pub fn pronoun_cases(seed: u64, count: usize) -> Vec<Rendered> {
    let mut g = Generator::new(seed, Split::HeldOut);
    (0..count)
        .map(|_| {
            let opening = format!("{} ", g.pick(HELD_OUT_OPENINGS));
            let (a, b) = g.two_people();
            let episode = g.pronoun_episode(a, b);
            let shift = |at: usize| at + opening.len();
            Rendered {
                text: opening.clone() + &episode.text,
                references: episode
                    .references
                    .iter()
                    .map(|&(p, a)| (shift(p), shift(a)))
                    .collect(),
            }
        })
        .collect()
}

/// Every name: the female ones and the male ones.
pub fn names() -> (&'static [&'static str], &'static [&'static str]) {
    (FEMALE, MALE)
}

/// The side of the division a pair of names is on, whichever order they come in.
pub fn pair_split(a: &str, b: &str) -> Split {
    if SHOWCASE_PAIRS.contains(&(a, b)) || SHOWCASE_PAIRS.contains(&(b, a)) {
        return Split::HeldOut;
    }
    // A fixed mix of the two names' bytes (FNV-1a over the pair in sorted order).
    let (x, y) = if a < b { (a, b) } else { (b, a) };
    let hash = x
        .bytes()
        .chain([0])
        .chain(y.bytes())
        .fold(0xcbf2_9ce4_8422_2325u64, |h, byte| {
            (h ^ byte as u64).wrapping_mul(0x0100_0000_01b3)
        });
    if hash % HELD_OUT_EVERY as u64 == 0 {
        Split::HeldOut
    } else {
        Split::Train
    }
}

/// One indirect-object sentence cut before its answer: "When Mary and John went to the store,
/// John gave a drink to", the answer " Mary", and the other name " John".
#[derive(Clone)]
pub struct IoiPrompt {
    pub prompt: String,
    pub answer: String,
    pub other: String,
    /// The template it was made from, its slots unfilled.
    pub template: &'static str,
}

/// `count` indirect-object prompts from the templates and names of `split`.
pub fn ioi_prompts(seed: u64, count: usize, split: Split) -> Vec<IoiPrompt> {
    let mut g = Generator::new(seed, split);
    (0..count)
        .map(|_| {
            let (a, b) = g.two_people();
            let template = g.ioi_template();
            let sentence = g.fill_ioi(template, a.name, b.name);
            let cut = sentence.rfind(' ').expect("a template has spaces");
            IoiPrompt {
                prompt: sentence[..cut].to_string(),
                answer: format!(" {}", a.name),
                other: format!(" {}", b.name),
                template,
            }
        })
        .collect()
}

/// `count` stories from the names and templates of `split`, the same for the same seed.
pub fn stories(seed: u64, count: usize, split: Split) -> Vec<String> {
    let mut g = Generator::new(seed, split);
    (0..count).map(|_| g.story()).collect()
}

/// `count` role stories (the module's last paragraph) from the training side's pairs of
/// names, the same for the same seed.
pub fn role_stories(seed: u64, count: usize) -> Vec<String> {
    let mut g = Generator::new(seed, Split::Train);
    (0..count).map(|_| g.role_story()).collect()
}

/// What the drill text may hold beyond the plain drills (`train --drill-things`,
/// `--drill-word-first`, `--drill-verbs`, `--drill-solo`, `--drill-watched-things`,
/// `--drill-ioi-only`, `--drill-placeless`, `--drill-corpus-asides`; the recipe's second phase
/// has word first, verbs and solo, post-LN's third phase those, placeless and corpus asides).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct DrillExtras {
    /// One pronoun-drill episode in three is one person and three things, "it" the one said
    /// in the singular (`Generator::role_thing`).
    pub things: bool,
    /// A quarter of the indirect-object drills open with a word of `before`, capitalised,
    /// right before the pair (`Generator::drill_opening`).
    pub word_first: bool,
    /// A pronoun drill's "him" / "her" comes after one of ten verbs (`WATCHING_VERBS`), not
    /// only "watched" and "saw".
    pub verbs: bool,
    /// One pronoun-drill episode in three is one person alone, named, then "he" / "she" and
    /// their deed (`Generator::solo`).
    pub solo: bool,
    /// One pronoun-drill episode in four is one person, a thing and two others, then "it"
    /// after a verb of watching and the thing's deed: the object "it" in the frame of "she
    /// watched him painting" (`Generator::watched_thing`).
    pub watched_things: bool,
    /// Every drill story is indirect-object sentences, none a pronoun drill: a phase that
    /// works on the indirect objects alone (`Generator::drill_story`).
    pub ioi_only: bool,
    /// A drill pair's doing may also be one without a place (`PLACELESS_DOINGS`).
    pub placeless: bool,
    /// Half the indirect-object drills whose opening ends a sentence go on with a sentence of
    /// the corpus before the action (`drill_stories_with_asides`), the pair-first ones too,
    /// not only one of `DRILL_ASIDES`' four: with those four alone the answer was found after
    /// them and often missed after other sentences.
    pub corpus_asides: bool,
}

/// `count` drill stories (the drill text of `train --drills`), the same for the same seed:
/// half are pronoun drills (three to five role episodes, each with a pair of its own), half
/// three to five indirect-object sentences of many shapes (`Generator::drill_opening`,
/// `DRILL_ACTIONS`), each with a pair of its own from the training side; half of those stories
/// open with the pair itself (`Generator::pair_first_ioi`). `extras` adds kinds of drill.
///
/// `before` are words a drill sentence may put right before its pair, as it is ("whale Mary
/// and John went to the park."; none: only the generator's own): with the words of a corpus,
/// a name comes after tokens of every kind, and the model must find it as a name, not by the
/// token before it.
pub fn drill_stories(
    seed: u64,
    count: usize,
    before: &[String],
    extras: DrillExtras,
) -> Vec<String> {
    drill_stories_with_asides(seed, count, before, &[], extras)
}

/// `drill_stories`, with `asides` the sentences `DrillExtras::corpus_asides` may put between
/// a drill's opening and its action (none: the four of `DRILL_ASIDES` only).
pub fn drill_stories_with_asides(
    seed: u64,
    count: usize,
    before: &[String],
    asides: &[String],
    extras: DrillExtras,
) -> Vec<String> {
    let mut g = Generator::new(seed, Split::Train);
    g.asides = asides.to_vec();
    let held_out = held_out_words();
    g.before = before
        .iter()
        .filter(|w| {
            let w = w.to_lowercase();
            !held_out.contains(&w) && !w.contains("while")
        })
        .cloned()
        .collect();
    g.extras = extras;
    (0..count).map(|_| g.drill_story()).collect()
}

/// Every word of the held-out templates (indirect objects and pronouns), lower case, their
/// slots left out: words that `drill_stories` never puts before a pair.
fn held_out_words() -> std::collections::HashSet<String> {
    IOI.iter()
        .filter(|t| t.split == Split::HeldOut)
        .map(|t| t.text)
        .chain([HELD_OUT_PRONOUN_TWO, HELD_OUT_PRONOUN_THING])
        // Split at the braces, the text and the slots alternate: every other piece is text.
        .flat_map(|t| t.split(['{', '}']).step_by(2))
        .flat_map(|text| text.split(|c: char| !c.is_alphabetic()))
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
        .collect()
}

/// The trade a name keeps in every story (`ROLES`): the i-th woman's name has the i-th trade,
/// the i-th man's the (i + 6)-th, round the list. A deed after "she" is then that of the
/// woman named before, whoever she is, and reading it off her name is the shortest way.
pub fn trade_of(name: &str) -> Option<(&'static str, &'static str, &'static str)> {
    if let Some(i) = FEMALE.iter().position(|n| *n == name) {
        return Some(ROLES[i % ROLES.len()]);
    }
    MALE.iter()
        .position(|n| *n == name)
        .map(|i| ROLES[(i + 6) % ROLES.len()])
}

/// A person and their trade in a role story (`ROLES`).
type Cast = (Person, (&'static str, &'static str, &'static str));

#[derive(Clone, Copy)]
struct Person {
    name: &'static str,
    female: bool,
}

impl Person {
    fn subject(self) -> &'static str {
        if self.female {
            "she"
        } else {
            "he"
        }
    }
    fn object(self) -> &'static str {
        if self.female {
            "her"
        } else {
            "him"
        }
    }
}

struct Generator {
    rng: ChaCha8Rng,
    split: Split,
    ioi: Vec<&'static str>,
    /// Words `drill_opening` may put right before the pair (`drill_stories`).
    before: Vec<String>,
    /// Sentences a drill may put between its opening and its action
    /// (`DrillExtras::corpus_asides`).
    asides: Vec<String>,
    extras: DrillExtras,
}

fn capitalised(s: &str) -> String {
    let mut c = s.chars();
    c.next()
        .map(|f| f.to_uppercase().chain(c).collect())
        .unwrap_or_default()
}

impl Generator {
    fn new(seed: u64, split: Split) -> Self {
        let ioi = IOI
            .iter()
            .filter(|t| t.split == split)
            .map(|t| t.text)
            .collect();
        Self {
            rng: ChaCha8Rng::seed_from_u64(seed),
            split,
            ioi,
            before: Vec::new(),
            asides: Vec::new(),
            extras: DrillExtras::default(),
        }
    }

    fn below(&mut self, n: usize) -> usize {
        (self.rng.next_u64() % n as u64) as usize
    }

    fn pick<T: Copy>(&mut self, list: &[T]) -> T {
        list[self.below(list.len())]
    }

    fn person(&mut self, female: bool) -> Person {
        let name = self.pick(if female { FEMALE } else { MALE });
        Person { name, female }
    }

    /// Two different people, of either gender, a pair of the generator's side.
    fn two_people(&mut self) -> (Person, Person) {
        loop {
            let a_female = self.below(2) == 0;
            let a = self.person(a_female);
            let b_female = self.below(2) == 0;
            let b = self.person(b_female);
            if b.name != a.name && pair_split(a.name, b.name) == self.split {
                return (a, b);
            }
        }
    }

    fn ioi(&mut self, a: &str, b: &str) -> String {
        let template = self.ioi_template();
        self.fill_ioi(template, a, b)
    }

    /// One of the side's indirect-object templates.
    fn ioi_template(&mut self) -> &'static str {
        let i = self.below(self.ioi.len());
        self.ioi[i]
    }

    /// An indirect-object template with `a` as the answer and `b` said twice, a place and a
    /// gift drawn.
    fn fill_ioi(&mut self, template: &str, a: &str, b: &str) -> String {
        let place = self.pick(PLACES);
        let gift = self.pick(GIFTS);
        // Half the time the pair is introduced the other way round (B and A): the answer is
        // still the name that is not repeated, not the first or the second one named.
        let first_pair = if self.below(2) == 0 {
            format!("{a} and {b}")
        } else {
            format!("{b} and {a}")
        };
        template
            .replace("{A} and {B}", &first_pair)
            .replace("{A}", a)
            .replace("{B}", b)
            .replace("{place}", place)
            .replace("{gift}", gift)
    }

    /// One person, then "he" or "she" and "it" for their thing; or two people of different
    /// genders, each referred to by the pronoun that only fits them; or a pair as "they".
    fn pronouns(&mut self, a: Person, b: Person) -> String {
        self.pronoun_episode(a, b).text
    }

    /// A pronoun episode of the generator's side, with where each pronoun and the word it
    /// stands for are.
    fn pronoun_episode(&mut self, a: Person, b: Person) -> Rendered {
        let template = match self.split {
            Split::Train => match self.below(3) {
                0 => PRONOUN_THING,
                1 if a.female != b.female => PRONOUN_TWO,
                _ => PRONOUN_PAIR,
            },
            Split::HeldOut => match self.below(2) {
                1 if a.female != b.female => HELD_OUT_PRONOUN_TWO,
                _ => HELD_OUT_PRONOUN_THING,
            },
        };
        self.render(template, a, b)
    }

    /// Fills a pronoun template's slots in the order they come (a slot said twice keeps its
    /// first word): `{A}` and `{B}` are the names, `{A.Subj}` / `{A.subj}` / `{A.obj}` their
    /// pronouns, `{thing}` a thing that `{it}` refers to, `{colour}`, `{place}`, `{gift}` and
    /// `{animal}` fillers.
    fn render(&mut self, template: &str, a: Person, b: Person) -> Rendered {
        let mut out = Rendered::default();
        let mut filled: Vec<(&str, &'static str)> = Vec::new();
        // Where each entity (A, B, the thing) was first named.
        let mut named: Vec<(char, usize)> = Vec::new();
        let mut rest = template;
        while let Some(open) = rest.find('{') {
            out.text.push_str(&rest[..open]);
            let close = open + rest[open..].find('}').expect("a closed slot");
            let slot = &rest[open + 1..close];
            rest = &rest[close + 1..];
            let at = out.text.len();
            let (word, entity, pronoun): (String, Option<char>, bool) = match slot {
                "A" => (a.name.to_string(), Some('A'), false),
                "B" => (b.name.to_string(), Some('B'), false),
                "A.Subj" => (capitalised(a.subject()), Some('A'), true),
                "B.Subj" => (capitalised(b.subject()), Some('B'), true),
                "A.subj" => (a.subject().to_string(), Some('A'), true),
                "B.subj" => (b.subject().to_string(), Some('B'), true),
                "A.obj" => (a.object().to_string(), Some('A'), true),
                "B.obj" => (b.object().to_string(), Some('B'), true),
                "it" => ("it".to_string(), Some('T'), true),
                filler => {
                    let word = match filled.iter().find(|(name, _)| *name == filler) {
                        Some((_, word)) => *word,
                        None => {
                            let word = match filler {
                                "thing" => self.pick(THINGS).0,
                                "colour" => self.pick(COLOURS),
                                "place" => self.pick(PLACES),
                                "gift" => self.pick(GIFTS),
                                "animal" => self.pick(ANIMALS).0,
                                other => panic!("unknown slot {{{other}}} in a pronoun template"),
                            };
                            filled.push((filler, word));
                            word
                        }
                    };
                    let entity = (filler == "thing").then_some('T');
                    (word.to_string(), entity, false)
                }
            };
            out.text.push_str(&word);
            match (entity, pronoun) {
                (Some(e), false) if !named.iter().any(|(n, _)| *n == e) => named.push((e, at)),
                (Some(e), true) => {
                    let antecedent = named
                        .iter()
                        .find(|(n, _)| *n == e)
                        .map(|(_, at)| *at)
                        .expect("a template names an entity before its pronoun");
                    out.references.push((at, antecedent));
                }
                _ => {}
            }
        }
        out.text.push_str(rest);
        out
    }

    /// A list said twice: the second time can be copied from the first.
    fn repeated_list(&mut self, a: Person) -> String {
        if self.below(3) == 0 {
            let digits: Vec<String> = (0..self.below(5) + 4)
                .map(|_| self.below(10).to_string())
                .collect();
            let code = digits.join(" ");
            return format!(
                "The code on the door was {code}. {} said the code again: {code}.",
                a.name
            );
        }
        let n = self.below(3) + 3;
        let mut items: Vec<&str> = Vec::with_capacity(n);
        while items.len() < n {
            let item = self.pick(ITEMS);
            if !items.contains(&item) {
                items.push(item);
            }
        }
        let list = format!("{} and {}", items[..n - 1].join(", "), items[n - 1]);
        let place = self.pick(PLACES);
        format!(
            "{} wrote a list: {list}. At the {place}, {} bought {list}.",
            a.name,
            a.subject(),
        )
    }

    /// A subject, a phrase whose noun has the other number, and the verb that agrees with the
    /// subject, not with the nearer noun.
    fn agreement(&mut self) -> String {
        let (thing, things) = self.pick(THINGS);
        let (animal, animals) = self.pick(ANIMALS);
        let place = self.pick(PLACES);
        match self.below(4) {
            0 => format!("The {things} next to the old {animal} were wet."),
            1 => format!("The {thing} next to the old {animals} was wet."),
            2 => format!("The {animals} near the {place} are hungry."),
            _ => format!("The {animal} near the {things} is hungry."),
        }
    }

    /// Two people with their trades, then each does their own deed, named by a pronoun.
    /// With two of one gender a pronoun could not say which, so they are named instead.
    fn roles(&mut self, (a, role_a): Cast, (b, role_b): Cast, trades_said: bool) -> String {
        let place = self.pick(PLACES);
        let intro = if trades_said {
            format!(
                "The {} {} met the {} {} at the {place}.",
                role_a.0, a.name, role_b.0, b.name
            )
        } else {
            format!("{} met {} at the {place}.", a.name, b.name)
        };
        // Either of them first, so the pronoun's person is not the first or the last named.
        let ((x, rx), (y, ry)) = if self.below(2) == 0 {
            ((a, role_a), (b, role_b))
        } else {
            ((b, role_b), (a, role_a))
        };
        if x.female == y.female {
            return format!("{intro} {} {}, and {} {}.", x.name, rx.1, y.name, ry.1);
        }
        match self.below(3) {
            0 => format!(
                "{intro} {} {}, and then {} {}.",
                capitalised(x.subject()),
                rx.1,
                y.subject(),
                ry.1
            ),
            1 => {
                let watched = self.watching_verb(trades_said, "watched");
                format!(
                    "{intro} {} {watched} {} {}.",
                    capitalised(x.subject()),
                    y.object(),
                    ry.2
                )
            }
            _ => {
                let saw = self.watching_verb(trades_said, "saw");
                format!(
                    "{intro} {} {saw} {} {}, and {} {}.",
                    x.name,
                    y.object(),
                    ry.2,
                    x.subject(),
                    rx.1
                )
            }
        }
    }

    /// The verb before "him" / "her" in a role episode: `committed`, or in a drill with
    /// `DrillExtras::verbs` one of `WATCHING_VERBS`.
    fn watching_verb(&mut self, trades_said: bool, committed: &'static str) -> &'static str {
        if trades_said || !self.extras.verbs {
            return committed;
        }
        self.pick(WATCHING_VERBS)
    }

    /// One person with a trade and a thing: "he" / "she" and "it", each followed by a deed
    /// that only its antecedent does. With `trades_said` false (a drill) the person is named
    /// alone, so only the name (`trade_of`) says what the deed after "he" / "she" is, and two
    /// other things come too, before or after the one: "it" must be found as the one thing
    /// said in the singular, as "she" is found as the one woman, not as the nearest thing.
    fn role_thing(&mut self, (a, role): Cast, trades_said: bool) -> String {
        let at = self.below(THING_DEEDS.len());
        let (thing, deed) = THING_DEEDS[at];
        let colour = self.pick(COLOURS);
        let place = self.pick(PLACES);
        let (who, things) = if trades_said {
            (
                format!("The {} {}", role.0, a.name),
                format!("a {colour} {thing}"),
            )
        } else {
            (a.name.to_string(), self.thing_among_others(at, colour))
        };
        match self.below(2) {
            0 => format!(
                "{who} picked up {things} at the {place}. {} {}, and then it {deed}.",
                capitalised(a.subject()),
                role.1
            ),
            _ => format!(
                "{who} had {things}. {} dropped it, and it {deed}.",
                capitalised(a.subject())
            ),
        }
    }

    /// An indirect-object sentence from `ROLE_IOI`, in either order of the pair.
    fn role_ioi(&mut self, a: &str, b: &str) -> String {
        let template = self.pick(ROLE_IOI);
        self.fill_ioi(template, a, b)
    }

    /// A role story: a cast of two, three to six episodes, most of them trades and indirect
    /// objects, some of `story`'s kinds so nothing it taught is forgotten.
    fn role_story(&mut self) -> String {
        // A third are drills: indirect-object sentences, each with a pair of its own, so the
        // answer is decided inside the sentence, as in the held-out prompts, and the names of
        // the sentences before are only distractions.
        if self.below(3) == 0 {
            let sentences = self.below(3) + 3;
            return (0..sentences)
                .map(|_| {
                    let (a, b) = self.two_people();
                    if self.below(2) == 0 {
                        self.ioi(a.name, b.name)
                    } else {
                        self.role_ioi(a.name, b.name)
                    }
                })
                .collect::<Vec<_>>()
                .join(" ");
        }
        // Mostly a woman and a man, whom "she" and "he" tell apart, of two trades.
        let (a, b) = loop {
            let pair = self.two_people();
            if (pair.0.female != pair.1.female || self.below(5) == 0)
                && trade_of(pair.0.name) != trade_of(pair.1.name)
            {
                break pair;
            }
        };
        // Each keeps their own trade (`trade_of`).
        let role_a = trade_of(a.name).expect("a name of the list");
        let role_b = trade_of(b.name).expect("a name of the list");
        let episodes = self.below(4) + 3;
        let mut out = Vec::with_capacity(episodes);
        for _ in 0..episodes {
            let (x, y) = if self.below(2) == 0 {
                ((a, role_a), (b, role_b))
            } else {
                ((b, role_b), (a, role_a))
            };
            let episode = match self.below(10) {
                0..=2 => self.roles(x, y, true),
                3 => self.role_thing(x, true),
                4 => self.role_ioi(x.0.name, y.0.name),
                5 | 6 => self.ioi(x.0.name, y.0.name),
                7 => self.pronouns(x.0, y.0),
                8 => self.repeated_list(x.0),
                _ => self.agreement(),
            };
            out.push(episode);
        }
        out.join(" ")
    }

    /// An indirect-object sentence put together from an opening, now and then an aside and
    /// an adverb, and an action: `b` does something to `a`, the name said once.
    fn varied_ioi(&mut self, a: &str, b: &str, word_first: bool) -> String {
        let opening = self.drill_opening(word_first);
        let action = self.pick(DRILL_ACTIONS);
        let aside = if self.corpus_asides() {
            self.corpus_aside(opening.ends_with('.'))
        } else if opening.ends_with('.') && self.below(4) == 0 {
            format!(" {}", self.pick(DRILL_ASIDES))
        } else {
            String::new()
        };
        let adverb = if self.below(4) == 0 {
            format!(" {}", self.pick(DRILL_ADVERBS))
        } else {
            String::new()
        };
        let template = format!("{opening}{aside} {{B}}{adverb} {action} {{A}}.");
        self.fill_ioi(&template, a, b)
    }

    fn corpus_asides(&self) -> bool {
        self.extras.corpus_asides && !self.asides.is_empty()
    }

    /// After an opening that ends a sentence, half the time a corpus sentence, now and then
    /// (one time in four of those) one of `DRILL_ASIDES`; " " before it, or nothing.
    fn corpus_aside(&mut self, after_a_sentence: bool) -> String {
        if !after_a_sentence || self.below(2) == 0 {
            return String::new();
        }
        if self.below(4) == 0 {
            return format!(" {}", self.pick(DRILL_ASIDES));
        }
        let at = self.below(self.asides.len());
        format!(" {}", self.asides[at])
    }

    /// What a drill pair does: one of `DRILL_DOINGS`, or with `DrillExtras::placeless` of
    /// those and `PLACELESS_DOINGS` (one draw either way: without it, the same stories).
    fn drill_doing(&mut self) -> &'static str {
        if !self.extras.placeless {
            return self.pick(DRILL_DOINGS);
        }
        let at = self.below(DRILL_DOINGS.len() + PLACELESS_DOINGS.len());
        DRILL_DOINGS
            .get(at)
            .copied()
            .unwrap_or_else(|| PLACELESS_DOINGS[at - DRILL_DOINGS.len()])
    }

    /// A story's first sentence with the pair at the very start: a name there has no space
    /// before it and is cut into other tokens (`M|ary`) than the same name later (` Mary`).
    fn pair_first_ioi(&mut self, a: &str, b: &str) -> String {
        let doing = self.drill_doing();
        let action = self.pick(DRILL_ACTIONS);
        let join = match self.below(3) {
            0 => ".",
            1 => ", and",
            _ => ", and then",
        };
        let aside = if self.corpus_asides() {
            self.corpus_aside(join == ".")
        } else {
            String::new()
        };
        let template = format!("{{A}} and {{B}} {doing}{join}{aside} {{B}} {action} {{A}}.");
        self.fill_ioi(&template, a, b)
    }

    /// A drill sentence's opening: the pair doing something somewhere, after a time, a
    /// conjunction, both or neither, ending where the action can follow.
    /// With `word_first` (the first sentence of a quarter of the indirect-object drill
    /// stories, `DrillExtras::word_first`) the opening is a word of the corpus, capitalised,
    /// then the pair: at a text's start the first name must be found
    /// after whatever the text begins with.
    fn drill_opening(&mut self, word_first: bool) -> String {
        let doing = self.drill_doing();
        let time = self.pick(DRILL_TIMES);
        let conjunction = self.pick(DRILL_CONJUNCTIONS);
        let lower = conjunction.to_lowercase();
        let manner = self.pick(DRILL_MANNERS);
        if word_first && !self.before.is_empty() {
            let at = self.below(self.before.len());
            let word = capitalised(&self.before[at]);
            return format!("{word} {{A}} and {{B}} {doing},");
        }
        match self.below(8) {
            0 | 1 => format!("{conjunction} {{A}} and {{B}} {doing},"),
            2 => format!("{time}, {{A}} and {{B}} {doing}."),
            3 => format!("{time}, {lower} {{A}} and {{B}} {doing},"),
            4 => format!("{{A}} and {{B}} {doing}."),
            5 => format!("{time} {{A}} and {{B}} {doing}, and"),
            6 if !self.before.is_empty() => {
                let at = self.below(self.before.len());
                let word = self.before[at].clone();
                format!("{word} {{A}} and {{B}} {doing}.")
            }
            _ => format!("{manner} {{A}} and {{B}} {doing}."),
        }
    }

    /// Half the time a pronoun drill (`pronoun_drill`; never with `DrillExtras::ioi_only`),
    /// else three to five `varied_ioi` sentences, each with a pair of its own.
    fn drill_story(&mut self) -> String {
        // Without `ioi_only` the coin is drawn as before it existed: same seed, same stories.
        if !self.extras.ioi_only && self.below(2) == 0 {
            return self.pronoun_drill();
        }
        let sentences = self.below(3) + 3;
        // Half open with the pair itself; with `word_first`, a quarter with a word of the
        // corpus and the pair.
        let opening = self.below(if self.extras.word_first { 4 } else { 2 });
        (0..sentences)
            .map(|i| {
                let (a, b) = self.two_people();
                if i == 0 && (opening == 0 || (self.extras.word_first && opening == 1)) {
                    return self.pair_first_ioi(a.name, b.name);
                }
                self.varied_ioi(a.name, b.name, i == 0 && opening == 2)
            })
            .collect::<Vec<_>>()
            .join(" ")
    }

    /// Three to five episodes, the trades not said: most are role episodes (`roles`), each
    /// with a woman and a man of their own, of two trades, where only the pronoun's gender says
    /// whose deed comes next and only the name (`trade_of`) what it is; one in three is one
    /// person and three things (`role_thing`), "it" the one said in the singular.
    fn pronoun_drill(&mut self) -> String {
        let episodes = self.below(3) + 3;
        (0..episodes)
            .map(|_| {
                let (a, b) = loop {
                    let pair = self.two_people();
                    if pair.0.female != pair.1.female
                        && trade_of(pair.0.name) != trade_of(pair.1.name)
                    {
                        break pair;
                    }
                };
                let cast = |p: Person| (p, trade_of(p.name).expect("a name of the list"));
                if self.extras.things && self.below(3) == 0 {
                    return self.role_thing(cast(a), false);
                }
                if self.extras.solo && self.below(3) == 0 {
                    return self.solo(cast(a));
                }
                if self.extras.watched_things && self.below(4) == 0 {
                    return self.watched_thing(a);
                }
                self.roles(cast(a), cast(b), false)
            })
            .collect::<Vec<_>>()
            .join(" ")
    }

    /// One person, then their deed after "he" / "she", the trade not said: the pronoun's
    /// antecedent is the one name of the episode, so looking from the pronoun at the nearest
    /// name already pays (`DrillExtras::solo`).
    fn solo(&mut self, (a, role): Cast) -> String {
        let place = self.pick(PLACES);
        let went = self.pick(&["went to", "walked to", "was at", "stopped at"]);
        format!(
            "{} {went} the {place}. {} {}.",
            a.name,
            capitalised(a.subject()),
            role.1
        )
    }

    /// `THING_DEEDS[at]`'s thing, coloured, and two things of another kind, before or after it:
    /// "a red kite and two bells" (the one said in the singular is the one "it" stands for).
    fn thing_among_others(&mut self, at: usize, colour: &str) -> String {
        let thing = THING_DEEDS[at].0;
        let others = THINGS[(at + 1 + self.below(THINGS.len() - 1)) % THINGS.len()].1;
        if self.below(2) == 0 {
            format!("a {colour} {thing} and two {others}")
        } else {
            format!("two {others} and a {colour} {thing}")
        }
    }

    /// One person, a thing and two of another kind, then the one thing as the object "it" of a
    /// verb of watching and its deed: "Mia picked up two bells and a red kite. She watched it
    /// flying high." (`DrillExtras::watched_things`).
    fn watched_thing(&mut self, a: Person) -> String {
        let at = self.below(THING_DEEDS.len());
        let colour = self.pick(COLOURS);
        let things = self.thing_among_others(at, colour);
        // The verbs of `WATCHING_VERBS` that can take a thing and its -ing deed.
        let watched = if self.extras.verbs {
            self.pick(&WATCHING_VERBS[..5])
        } else {
            "watched"
        };
        format!(
            "{} picked up {things}. {} {watched} it {}.",
            a.name,
            capitalised(a.subject()),
            THING_DOINGS[at]
        )
    }

    /// A story: a cast of two, three to six episodes about them.
    fn story(&mut self) -> String {
        let (a, b) = self.two_people();
        let episodes = self.below(4) + 3;
        let mut out = Vec::with_capacity(episodes);
        for _ in 0..episodes {
            // Either of the two may lead an episode.
            let (x, y) = if self.below(2) == 0 { (a, b) } else { (b, a) };
            let episode = match self.below(4) {
                0 => self.pronouns(x, y),
                1 => self.ioi(x.name, y.name),
                2 => self.repeated_list(x),
                _ => self.agreement(),
            };
            out.push(episode);
        }
        out.join(" ")
    }
}
