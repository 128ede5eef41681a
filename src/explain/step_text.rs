//! The words and equation the stepper shows beside each step of a pass, in the notation of
//! the lecture notes (row vectors: Q = X W_Q, softmax(Q K^T / sqrt(d_k)) V). Every text that
//! names a number (a width, a head count) reads it from the model's config.

use crate::model::config::{Activation, ModelConfig, NormKind, NormPlace, Position};
use crate::trace::{Op, Step};

/// What a student reads about one step.
pub struct StepText {
    /// "Scaled scores (layer 1)".
    pub title: String,
    /// The equation applied, in LaTeX.
    pub equation: String,
    /// What happened, in plain words.
    pub explanation: String,
}

/// The texts of `step`, a step of a pass of the model `config` describes (an encoder-decoder's
/// encoder steps: `ModelConfig::encoder_config`).
pub fn step_text(step: &Step, config: &ModelConfig) -> StepText {
    op_text(step.op, step.layer, config)
}

fn norm_equation(config: &ModelConfig) -> &'static str {
    match config.norm {
        NormKind::Layer => {
            r"\mathrm{LN}(x) = \gamma \odot \frac{x - \mu}{\sqrt{\sigma^2 + \epsilon}} + \beta"
        }
        NormKind::Rms => {
            r"\mathrm{RMSNorm}(x) = \gamma \odot \frac{x}{\sqrt{\tfrac{1}{d}\sum_i x_i^2 + \epsilon}}"
        }
    }
}

fn norm_words(config: &ModelConfig) -> &'static str {
    match config.norm {
        NormKind::Layer => "each token's vector is shifted to mean 0 and scaled to standard deviation 1 across its features, then every feature is stretched by gamma and moved by beta",
        NormKind::Rms => "each token's vector is divided by its root mean square, so its typical size becomes 1, then every feature is stretched by gamma",
    }
}

/// The texts of the step `op` of `layer` (`None` outside the layers).
pub fn op_text(op: Op, layer: Option<usize>, config: &ModelConfig) -> StepText {
    let at = layer.map(|l| format!(" (layer {l})")).unwrap_or_default();
    let post = config.norm_place == NormPlace::Post;
    let (title, equation, explanation): (String, String, String) = match op {
        Op::Tokenize => (
            "Tokenize".into(),
            r"\text{text} \mapsto (t_1, \dots, t_T)".into(),
            "The text is cut into tokens from the model's vocabulary; each token becomes an integer id.".into(),
        ),
        Op::TokenEmbedding => (
            "Token embedding".into(),
            if config.embedding_scale == 1.0 {
                r"X_i = E[t_i] \in \mathbb{R}^{d_{model}}".into()
            } else {
                r"X_i = \sqrt{d_{model}}\; E[t_i] \in \mathbb{R}^{d_{model}}".into()
            },
            if config.embedding_scale == 1.0 {
                "Each id picks one row of the learned embedding matrix E: a vector that stands for the token before it has seen any context.".into()
            } else {
                format!("Each id picks one row of the learned embedding matrix E: a vector that stands for the token before it has seen any context. As in the original paper, the row is multiplied by √d_model = {:.2}, so that the token's part is about as large as the position vector added next (E itself stays small, because it is also the unembedding).", config.embedding_scale)
            },
        ),
        Op::SegmentEmbedding => (
            "Segment embedding".into(),
            r"S_0 \in \mathbb{R}^{d_{model}}".into(),
            "BERT-style models add a learned vector saying which sentence a token belongs to; with one sentence every token gets segment 0.".into(),
        ),
        Op::PositionEncoding => {
            let (eq, words) = match config.position {
                Position::Sinusoidal => (
                    r"PE_{(p, 2i)} = \sin\!\left(\frac{p}{10000^{2i/d_{model}}}\right),\quad PE_{(p, 2i+1)} = \cos\!\left(\frac{p}{10000^{2i/d_{model}}}\right)",
                    "Position p gets a fixed vector of sines and cosines whose wavelengths grow geometrically along the features, so every position has a distinct pattern.",
                ),
                _ => (
                    r"P_p = W_{pos}[p]",
                    "Position p picks row p of a table learned in training, in the same way a token id picks its embedding.",
                ),
            };
            ("Positional encoding".into(), eq.into(), words.into())
        }
        Op::AddPosition => (
            "Add position".into(),
            {
                // The token's part as the step before computed it: scaled when the model scales it.
                let token = if config.embedding_scale == 1.0 {
                    r"E[t_p]"
                } else {
                    r"\sqrt{d_{model}}\; E[t_p]"
                };
                let segment = if config.token_types > 0 { r" + S_0" } else { "" };
                format!("x_p = {token} + P_p{segment}")
            },
            "Attention itself ignores order, so the position vector is added to each token's embedding: the same word at two places now has two different inputs.".into(),
        ),
        Op::EmbeddingNorm => (
            "Embedding layer norm".into(),
            norm_equation(config).into(),
            format!("Before the first layer, {}.", norm_words(config)),
        ),
        Op::AttentionNorm => (
            format!("Layer norm{}", if post { " after attention" } else { " before attention" }),
            if post { format!(r"x \leftarrow \mathrm{{LN}}(x + \mathrm{{MultiHead}}(x)),\quad {}", norm_equation(config)) } else { norm_equation(config).into() },
            format!("{}: {}.", if post { "The sum of the stream and attention's output is normalised" } else { "The stream is normalised before attention reads it" }, norm_words(config)),
        ),
        Op::Query => ("Queries".into(), r"Q_h = X W_Q^h + b_Q^h".into(), "Each token projects itself into a query per head: what it is looking for.".into()),
        Op::Key => (
            "Keys".into(),
            r"K_h = X W_K^h + b_K^h".into(),
            if config.n_kv_heads < config.n_heads {
                format!("Each token projects itself into a key: what it offers to be found by. Grouped-query attention: {} key heads are shared by {} query heads.", config.n_kv_heads, config.n_heads)
            } else {
                "Each token projects itself into a key per head: what it offers to be found by.".into()
            },
        ),
        Op::Value => ("Values".into(), r"V_h = X W_V^h + b_V^h".into(), "Each token projects itself into a value per head: what it hands over when attended to.".into()),
        Op::RotaryQuery | Op::RotaryKey => {
            let title = if op == Op::RotaryQuery { "Rotate queries" } else { "Rotate keys" };
            (
                title.into(),
                r"(x_{2i}, x_{2i+1}) \mapsto R(p\,\theta_i)(x_{2i}, x_{2i+1}),\quad \theta_i = b^{-2i/d_k}".into(),
                "Rotary encoding turns each pair of features by an angle proportional to the position, so the dot product of a query and a key depends only on how far apart they are.".into(),
            )
        }
        Op::Scores => (
            "Scaled scores".into(),
            r"S_h = \frac{Q_h K_h^\top}{\sqrt{d_k}}".into(),
            format!("Every query is compared with every key by a dot product, divided by sqrt(d_k) = sqrt({}) so the scores do not grow with the head size.", config.head_dim),
        ),
        Op::Mask => (
            "Mask".into(),
            if config.causal { r"S_{ij} \leftarrow -\infty \quad \text{for } j > i".into() } else { r"S_{ij} \text{ unchanged: every token may see every token}".into() },
            if config.causal {
                "A decoder must not look at the future: scores of later keys are set to minus infinity, which softmax turns into exactly 0.".into()
            } else {
                "This is an encoder, so nothing is hidden: every token may attend to every other token, before and after it.".into()
            },
        ),
        Op::Softmax => (
            "Softmax".into(),
            r"A_{ij} = \frac{e^{S_{ij}}}{\sum_k e^{S_{ik}}}".into(),
            "Each row of scores becomes a probability distribution: the weights a query gives to the keys, positive and summing to 1.".into(),
        ),
        Op::WeightedSum => (
            "Weighted sum of values".into(),
            r"\mathrm{head}_h = A_h V_h".into(),
            "Each token's head output is the average of the value vectors, weighted by its attention row.".into(),
        ),
        Op::Concat => (
            "Concatenate heads".into(),
            r"\mathrm{Concat}(\mathrm{head}_1, \dots, \mathrm{head}_h)".into(),
            format!("The {} head outputs of each token are laid side by side into one vector of {} features.", config.n_heads, config.n_heads * config.head_dim),
        ),
        Op::OutputProjection => (
            "Output projection".into(),
            r"\mathrm{MultiHead}(X) = \mathrm{Concat}(\mathrm{head}_1, \dots, \mathrm{head}_h)\, W^O".into(),
            "A learned matrix mixes the heads' findings back into the model's width.".into(),
        ),
        Op::AttentionResidual => (
            "Residual add (attention)".into(),
            r"x \leftarrow x + \mathrm{MultiHead}(x)".into(),
            "Attention's output is added to its input instead of replacing it: the stream keeps what it had and gains what attention found.".into(),
        ),
        Op::EncoderOutput => (
            "Encoder output".into(),
            r"M = \mathrm{Encoder}(s_1, \dots, s_S) \in \mathbb{R}^{S \times d_{model}}".into(),
            "The encoder has read the whole source, every token seeing every other: these are its final vectors, one per source token. Every cross-attention below takes its keys and values from them.".into(),
        ),
        Op::CrossNorm => (
            format!("Layer norm{}", if post { " after cross-attention" } else { " before cross-attention" }),
            if post { format!(r"x \leftarrow \mathrm{{LN}}(x + \mathrm{{CrossAttn}}(x, M)),\quad {}", norm_equation(config)) } else { norm_equation(config).into() },
            format!("{}: {}.", if post { "The sum of the stream and cross-attention's output is normalised" } else { "The stream is normalised before cross-attention reads it" }, norm_words(config)),
        ),
        Op::CrossQuery => (
            "Cross-attention queries".into(),
            r"Q_h = X W_Q^h + b_Q^h \quad (X: \text{the decoder's stream})".into(),
            "Each target token projects itself into a query per head: what it needs from the source.".into(),
        ),
        Op::CrossKey => (
            "Cross-attention keys".into(),
            r"K_h = M W_K^h + b_K^h \quad (M: \text{the encoder's output})".into(),
            "The keys come from the encoder's output, not from the decoder: each source token offers itself to be found.".into(),
        ),
        Op::CrossValue => (
            "Cross-attention values".into(),
            r"V_h = M W_V^h + b_V^h".into(),
            "The values also come from the encoder's output: what each source token hands over to the target tokens that attend to it.".into(),
        ),
        Op::CrossScores => (
            "Cross-attention scores".into(),
            r"S_h = \frac{Q_h K_h^\top}{\sqrt{d_k}} \in \mathbb{R}^{T \times S}".into(),
            format!("Every target token's query is compared with every source token's key, divided by sqrt(d_k) = sqrt({}). Nothing is masked: the whole source is known before decoding starts.", config.head_dim),
        ),
        Op::CrossSoftmax => (
            "Cross-attention softmax".into(),
            r"A_{ij} = \frac{e^{S_{ij}}}{\sum_k e^{S_{ik}}}".into(),
            "Each target row becomes a distribution over the source tokens: where in the source this target token looks.".into(),
        ),
        Op::CrossWeightedSum => (
            "Cross-attention: weighted sum".into(),
            r"\mathrm{head}_h = A_h V_h".into(),
            "Each target token receives the average of the source tokens' values, weighted by its row of cross-attention.".into(),
        ),
        Op::CrossConcat => (
            "Cross-attention: concatenate heads".into(),
            r"\mathrm{Concat}(\mathrm{head}_1, \dots, \mathrm{head}_h)".into(),
            format!("The {} head outputs of each target token are laid side by side.", config.n_heads),
        ),
        Op::CrossOutput => (
            "Cross-attention output projection".into(),
            r"\mathrm{CrossAttn}(X, M) = \mathrm{Concat}(\mathrm{head}_1, \dots, \mathrm{head}_h)\, W^O".into(),
            "A learned matrix mixes what the heads brought from the source back into the model's width.".into(),
        ),
        Op::CrossResidual => (
            "Residual add (cross-attention)".into(),
            r"x \leftarrow x + \mathrm{CrossAttn}(x, M)".into(),
            "What the target tokens read from the source is added to their stream.".into(),
        ),
        Op::FfnNorm => (
            format!("Layer norm{}", if post { " after the feed-forward" } else { " before the feed-forward" }),
            if post { format!(r"x \leftarrow \mathrm{{LN}}(x + \mathrm{{FFN}}(x)),\quad {}", norm_equation(config)) } else { norm_equation(config).into() },
            format!("{}: {}.", if post { "The sum of the stream and the feed-forward output is normalised" } else { "The stream is normalised before the feed-forward reads it" }, norm_words(config)),
        ),
        Op::FfnUp => (
            "Feed-forward: expand".into(),
            r"z = x W_1 + b_1".into(),
            format!("Each token on its own is projected from {} up to {} features; the same weights serve every position.", config.d_model, config.d_ff),
        ),
        Op::FfnGate => ("Feed-forward: gate".into(), r"g = x W_{gate}".into(), "A second projection that decides, feature by feature, how much of the expansion passes.".into()),
        Op::FfnActivation => {
            let (eq, words) = match config.activation {
                Activation::Relu => (r"h = \max(0, z)", "ReLU keeps positive features and zeroes the rest."),
                Activation::Gelu => (r"h = z\,\Phi(z) = \tfrac{z}{2}\left(1 + \mathrm{erf}(z/\sqrt{2})\right)", "GELU lets positive features through and smoothly squashes negative ones towards 0."),
                Activation::SwiGlu => (r"h = \mathrm{SiLU}(g) \odot z,\quad \mathrm{SiLU}(g) = g\,\sigma(g)", "SwiGLU multiplies the expansion by a smooth gate computed from the token itself."),
            };
            ("Feed-forward: activation".into(), eq.into(), words.into())
        }
        Op::FfnDown => (
            "Feed-forward: project back".into(),
            r"\mathrm{FFN}(x) = h W_2 + b_2".into(),
            format!("The {} hidden features are projected back down to {}.", config.d_ff, config.d_model),
        ),
        Op::FfnResidual => (
            "Residual add (feed-forward)".into(),
            r"x \leftarrow x + \mathrm{FFN}(x)".into(),
            "The feed-forward output is added to the stream, as attention's was.".into(),
        ),
        Op::FinalNorm => ("Final norm".into(), norm_equation(config).into(), format!("After the last layer, {}.", norm_words(config))),
        Op::Unembed => (
            "Unembed".into(),
            r"\text{logits} = x\, W_U^\top".into(),
            "Each final vector is compared with every vocabulary entry by a dot product: one score per possible next token.".into(),
        ),
        Op::NextTokenProbabilities => (
            "Next-token probabilities".into(),
            r"p(w \mid t_{1..T}) = \mathrm{softmax}(\text{logits}_T)_w".into(),
            "Softmax over the last token's scores gives the model's probability for every possible next token.".into(),
        ),
    };
    StepText {
        title: format!("{title}{at}"),
        equation,
        explanation,
    }
}
