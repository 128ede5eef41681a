//! Which earlier word a pronoun refers to, by the cue that decides it in simple sentences:
//! "she" and "her" take the nearest earlier woman's name, "he" and "him" a man's, "it" the
//! nearest earlier thing or animal, "they" and "them" the nearest plural noun or pair of names
//! ("Mary and John"). It knows only the words below (the lecture stories' names and nouns):
//! a pronoun whose antecedent is not among them is left out, so a score built on it says
//! nothing rather than something wrong. Real coreference needs more than agreement (in "The
//! trophy didn't fit in the suitcase because it was too big", both nouns agree with "it"); a
//! student can compare a head's choice with this rule's.
//!
//! Written here, not taken from a crate: the coreference resolvers that exist are Python
//! models; this needs a word list and a rule a student can check by eye.

use crate::tokenize::TokenInfo;

pub const FEMALE_NAMES: &[&str] = &[
    "Mary", "Anna", "Lucy", "Emma", "Sarah", "Kate", "Alice", "Rose", "Jane", "Lily", "Clara",
    "Ella", "Grace", "Nora", "Ruth", "Sophie", "Helen", "Amy", "Laura", "Julia", "Eva", "Molly",
    "Hannah", "Ivy", "Mia",
];
pub const MALE_NAMES: &[&str] = &[
    "John", "Tom", "Sam", "Jack", "Peter", "Paul", "Mark", "David", "James", "Ben", "Leo", "Max",
    "Henry", "Oscar", "Adam", "Luke", "Harry", "Daniel", "Noah", "Ryan", "Alex", "Joe", "Fred",
    "Carl", "Dan",
];
/// Things, each with its plural.
pub const THINGS: &[(&str, &str)] = &[
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
/// Animals, each with its plural.
pub const ANIMALS: &[(&str, &str)] = &[
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
/// Other nouns a pronoun may stand for, each with its plural (not in the stories).
pub const OTHER_NOUNS: &[(&str, &str)] = &[
    ("animal", "animals"),
    ("child", "children"),
    ("person", "people"),
    ("car", "cars"),
    ("book", "books"),
    ("tree", "trees"),
];

/// What a pronoun or a noun agrees with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Agreement {
    Female,
    Male,
    /// A thing or an animal, one of it.
    Neuter,
    Plural,
}

impl Agreement {
    /// The agreement a pronoun asks for, any case; `None` for other words.
    pub fn of_pronoun(word: &str) -> Option<Agreement> {
        match word.to_lowercase().as_str() {
            "she" | "her" | "hers" | "herself" => Some(Agreement::Female),
            "he" | "him" | "his" | "himself" => Some(Agreement::Male),
            "it" | "its" | "itself" => Some(Agreement::Neuter),
            "they" | "them" | "their" | "themselves" => Some(Agreement::Plural),
            _ => None,
        }
    }

    /// The agreement of a word this module knows as a possible antecedent. A name must be
    /// capitalised ("Rose", not "rose") unless the tokenizer lowercases everything (`uncased`).
    fn of_word(word: &str, uncased: bool) -> Option<Agreement> {
        if is_name(word, FEMALE_NAMES, uncased) {
            return Some(Agreement::Female);
        }
        if is_name(word, MALE_NAMES, uncased) {
            return Some(Agreement::Male);
        }
        let lower = word.to_lowercase();
        let nouns = THINGS.iter().chain(ANIMALS).chain(OTHER_NOUNS);
        for (one, many) in nouns {
            // "sheep" is both: the nearer reading wins below, so call it one.
            if lower == *one {
                return Some(Agreement::Neuter);
            }
            if lower == *many {
                return Some(Agreement::Plural);
            }
        }
        None
    }
}

/// A word of a tokenized text: its letters and the tokens it spans.
#[derive(Debug, Clone, PartialEq)]
pub struct Word {
    pub text: String,
    /// Token positions, first to last.
    pub tokens: std::ops::Range<usize>,
}

/// The words of a tokenized text: a token that starts with a space, follows a special token or
/// is punctuation starts a new word; special tokens belong to none. WordPiece tokens carry no
/// spaces: there every token starts a word but a `##` piece, which goes on the one before.
pub fn words(tokens: &[TokenInfo]) -> Vec<Word> {
    let spaced = tokens
        .iter()
        .any(|t| !t.special && t.text.starts_with(char::is_whitespace));
    let mut words: Vec<Word> = Vec::new();
    let mut open = false;
    for (i, t) in tokens.iter().enumerate() {
        if t.special {
            open = false;
            continue;
        }
        let piece = t.text.strip_prefix("##");
        let starts_word = if spaced {
            t.text.starts_with(char::is_whitespace) || !open
        } else {
            piece.is_none() || !open
        };
        let text = piece.unwrap_or(&t.text).trim();
        let punctuation = !text.is_empty() && text.chars().all(|c| !c.is_alphanumeric());
        match words.last_mut() {
            Some(w) if open && !starts_word && !punctuation => {
                w.text.push_str(text);
                w.tokens.end = i + 1;
            }
            _ => words.push(Word {
                text: text.to_string(),
                tokens: i..i + 1,
            }),
        }
        open = !punctuation;
    }
    words
}

/// A pronoun and the tokens of the antecedent the agreement rule picks for it.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Reference {
    /// The pronoun's first token.
    pub pronoun: usize,
    /// The antecedent's last token, where the whole word has been read (a name at the start
    /// of a text is cut into pieces, `M|ary`, and its first piece is only a letter right after
    /// the start, where many heads rest whatever the text): one for a name or a noun, two for a
    /// pair of names.
    pub antecedent: Vec<usize>,
    /// The pronoun and its antecedent's words as the text spells them (what a page says).
    pub pronoun_word: String,
    pub antecedent_words: Vec<String>,
}

/// Every pronoun of the text with the nearest earlier word (or "X and Y" pair of names, for
/// "they") that agrees with it; pronouns with no such word are left out.
pub fn references(tokens: &[TokenInfo]) -> Vec<Reference> {
    let words = words(tokens);
    // An uncased tokenizer (MiniLM's) writes every word in lower case.
    let uncased = !words.iter().any(|w| w.text.chars().any(char::is_uppercase));
    let any_name = |w: &str| is_name(w, FEMALE_NAMES, uncased) || is_name(w, MALE_NAMES, uncased);
    let mut out = Vec::new();
    for (w, word) in words.iter().enumerate() {
        let Some(wanted) = Agreement::of_pronoun(&word.text) else {
            continue;
        };
        let earlier = &words[..w];
        let found = earlier.iter().enumerate().rev().find_map(|(k, candidate)| {
            if Agreement::of_word(&candidate.text, uncased) == Some(wanted) {
                return Some(vec![candidate]);
            }
            // "Mary and John" is a plural antecedent: "and" between two names.
            let pair = wanted == Agreement::Plural
                && candidate.text == "and"
                && k >= 1
                && k + 1 < earlier.len()
                && any_name(&earlier[k - 1].text)
                && any_name(&earlier[k + 1].text);
            pair.then(|| vec![&earlier[k - 1], &earlier[k + 1]])
        });
        if let Some(antecedent) = found {
            out.push(Reference {
                pronoun: word.tokens.start,
                antecedent: antecedent.iter().map(|a| a.tokens.end - 1).collect(),
                pronoun_word: word.text.clone(),
                antecedent_words: antecedent.iter().map(|a| a.text.clone()).collect(),
            });
        }
    }
    out
}

fn is_name(word: &str, names: &[&str], uncased: bool) -> bool {
    names
        .iter()
        .any(|n| *n == word || (uncased && n.to_lowercase() == word))
}
