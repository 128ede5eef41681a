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

use rand_chacha::ChaCha8Rng;
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

const FEMALE: &[&str] = &[
    "Mary", "Anna", "Lucy", "Emma", "Sarah", "Kate", "Alice", "Rose", "Jane", "Lily", "Clara",
    "Ella", "Grace", "Nora", "Ruth", "Sophie", "Helen", "Amy", "Laura", "Julia", "Eva", "Molly",
    "Hannah", "Ivy", "Mia",
];
const MALE: &[&str] = &[
    "John", "Tom", "Sam", "Jack", "Peter", "Paul", "Mark", "David", "James", "Ben", "Leo", "Max",
    "Henry", "Oscar", "Adam", "Luke", "Harry", "Daniel", "Noah", "Ryan", "Alex", "Joe", "Fred",
    "Carl", "Dan",
];
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
/// Things, each with its plural.
const THINGS: &[(&str, &str)] = &[
    ("ball", "balls"),
    ("kite", "kites"),
    ("box", "boxes"),
    ("boat", "boats"),
    ("basket", "baskets"),
    ("drum", "drums"),
    ("clock", "clocks"),
    ("bell", "bells"),
    ("bike", "bikes"),
    ("jar", "jars"),
    ("glass", "glasses"),
    ("brush", "brushes"),
];
const COLOURS: &[&str] = &[
    "red", "blue", "green", "yellow", "small", "big", "old", "new",
];
const ITEMS: &[&str] = &[
    "bread", "milk", "eggs", "apples", "rice", "cheese", "pears", "soap", "tea", "honey",
    "carrots", "salt", "beans", "plums", "butter", "nuts",
];
/// Animals, each with its plural.
const ANIMALS: &[(&str, &str)] = &[
    ("dog", "dogs"),
    ("cat", "cats"),
    ("horse", "horses"),
    ("bird", "birds"),
    ("goat", "goats"),
    ("fox", "foxes"),
    ("duck", "ducks"),
    ("mouse", "mice"),
    ("sheep", "sheep"),
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
pub struct IoiPrompt {
    pub prompt: String,
    pub answer: String,
    pub other: String,
}

/// `count` indirect-object prompts from the templates and names of `split`.
pub fn ioi_prompts(seed: u64, count: usize, split: Split) -> Vec<IoiPrompt> {
    let mut g = Generator::new(seed, split);
    (0..count)
        .map(|_| {
            let (a, b) = g.two_people();
            let sentence = g.ioi(a.name, b.name);
            let cut = sentence.rfind(' ').expect("a template has spaces");
            IoiPrompt {
                prompt: sentence[..cut].to_string(),
                answer: format!(" {}", a.name),
                other: format!(" {}", b.name),
            }
        })
        .collect()
}

/// `count` stories from the names and templates of `split`, the same for the same seed.
pub fn stories(seed: u64, count: usize, split: Split) -> Vec<String> {
    let mut g = Generator::new(seed, split);
    (0..count).map(|_| g.story()).collect()
}

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
        let i = self.below(self.ioi.len());
        let template = self.ioi[i];
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
        match self.below(3) {
            0 => {
                let colour = self.pick(COLOURS);
                let (thing, _) = self.pick(THINGS);
                let (animal, _) = self.pick(ANIMALS);
                format!(
                    "{} had a {colour} {thing}. {} gave it to the {animal}, and the {animal} liked it.",
                    a.name,
                    capitalised(a.subject()),
                )
            }
            1 if a.female != b.female => {
                let place = self.pick(PLACES);
                let gift = self.pick(GIFTS);
                format!(
                    "{} met {} at the {place}. {} was happy to see {}, so {} gave {} {gift}.",
                    a.name,
                    b.name,
                    capitalised(b.subject()),
                    a.object(),
                    b.subject(),
                    a.object(),
                )
            }
            _ => {
                let place = self.pick(PLACES);
                let (animal, _) = self.pick(ANIMALS);
                format!(
                    "{} and {} went to the {place}. They saw a {animal} there, and they followed it home.",
                    a.name, b.name,
                )
            }
        }
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
