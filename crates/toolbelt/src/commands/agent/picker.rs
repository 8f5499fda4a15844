//! The picker that puts `ask_user`'s questions on the interactive screen, one
//! after another: the header and the question, the options numbered with their
//! descriptions, and a last entry for answering in one's own words.
//!
//! Keys: ↑/↓ (or k/j) move; a number picks its option (in a multi-select
//! question, ticks it); Space ticks; Enter confirms. On "Type your own answer"
//! the keys type the answer: Enter finishes it, Esc goes back to the options.
//! Esc declines every question of the set; Ctrl-C declines them and stops the run.
//!
//! [`Picker`] is one question's state and lines (pure, tested here); [`ask`]
//! draws it in raw mode and redraws it in place after each key, then leaves the
//! question and its answer on the screen.

use std::io::{BufRead, Write};

use crossterm::cursor::{Hide, MoveToColumn, MoveToPreviousLine, Show};
use crossterm::event::{self, Event, KeyCode, KeyEvent, KeyEventKind, KeyModifiers};
use crossterm::style::Print;
use crossterm::terminal::{self, Clear, ClearType};
use toolbelt_core::{Answer, Question};
use unicode_width::{UnicodeWidthChar, UnicodeWidthStr};

use super::render::Paint;

/// The last entry: an answer in one's own words.
const OWN_ANSWER: &str = "Type your own answer";
/// What the last entry shows while the answer is typed.
const OWN_PROMPT: &str = "Your answer: ";
/// The most lines of an option's description shown.
const MAX_DESCRIPTION_LINES: usize = 2;
/// The narrowest the picker lays itself out for.
const MIN_WIDTH: usize = 20;

/// What a key did to a question.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Step {
    /// Nothing is decided yet.
    Stay,
    /// The question is answered.
    Answered(Answer),
    /// Esc (or Ctrl-D): no answer to any question of the set.
    Declined,
    /// Ctrl-C: no answers, and the run stops.
    Interrupted,
}

/// How a set of questions ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// One answer per question, in order.
    Answered(Vec<Answer>),
    /// Esc: the person chose not to answer.
    Declined,
    /// Ctrl-C: the person stopped the run.
    Interrupted,
}

/// One question on the screen: where the cursor is, what is ticked, what is typed.
#[derive(Debug)]
pub struct Picker<'q> {
    question: &'q Question,
    /// Which of the set it is (`(1, 2)`: the first of two); `None` when alone.
    position: Option<(usize, usize)>,
    /// The entry under the cursor: an option, or (one past the options) the
    /// own-answer entry.
    cursor: usize,
    /// The options ticked (multi-select).
    ticked: Vec<bool>,
    /// The own answer, while it is typed.
    typing: Option<String>,
    /// The last entry offers an answer in one's own words.
    own_answer: bool,
}

/// The lines of a picker, and where the terminal's cursor goes (the line and
/// column of the typed answer's end), if anywhere.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Drawn {
    /// The lines, each narrower than the width asked for.
    pub lines: Vec<String>,
    /// Line and column of the caret while an answer is typed.
    pub caret: Option<(usize, usize)>,
}

impl<'q> Picker<'q> {
    /// The picker of `question`, the `position`th of a set (`None`: the only one).
    pub fn new(question: &'q Question, position: Option<(usize, usize)>) -> Picker<'q> {
        Picker {
            question,
            position,
            cursor: 0,
            ticked: vec![false; question.options.len()],
            typing: None,
            own_answer: true,
        }
    }

    /// The same without the entry for an answer in one's own words: one of the
    /// options is the answer.
    pub fn options_only(mut self) -> Picker<'q> {
        self.own_answer = false;
        self
    }

    /// The same with the cursor on option `i` (the last one when past it).
    pub fn with_cursor(mut self, i: usize) -> Picker<'q> {
        self.cursor = i.min(self.last());
        self
    }

    /// The entry under the cursor (the option picked, once one is).
    pub fn cursor(&self) -> usize {
        self.cursor
    }

    /// The index of the own-answer entry.
    fn own(&self) -> usize {
        self.question.options.len()
    }

    /// The index of the last entry.
    fn last(&self) -> usize {
        if self.own_answer {
            self.own()
        } else {
            self.own().saturating_sub(1)
        }
    }

    /// Handles one key.
    pub fn key(&mut self, key: KeyEvent) -> Step {
        if key.modifiers.contains(KeyModifiers::CONTROL) {
            match key.code {
                KeyCode::Char('c') => return Step::Interrupted,
                KeyCode::Char('d') => return Step::Declined,
                KeyCode::Char('u') => {
                    if let Some(text) = &mut self.typing {
                        text.clear();
                    }
                }
                KeyCode::Char('w') => {
                    if let Some(text) = &mut self.typing {
                        let kept = text.trim_end().rfind(' ').map_or(0, |i| i + 1);
                        text.truncate(kept);
                    }
                }
                KeyCode::Char('p') if self.typing.is_none() => self.up(),
                KeyCode::Char('n') if self.typing.is_none() => self.down(),
                _ => {}
            }
            return Step::Stay;
        }
        if let Some(text) = &mut self.typing {
            match key.code {
                KeyCode::Enter => return self.finish_typing(),
                KeyCode::Esc => self.typing = None,
                KeyCode::Backspace => {
                    text.pop();
                }
                KeyCode::Char(c) => text.push(c),
                _ => {}
            }
            return Step::Stay;
        }
        match key.code {
            KeyCode::Up | KeyCode::Char('k') | KeyCode::BackTab => self.up(),
            KeyCode::Down | KeyCode::Char('j') | KeyCode::Tab => self.down(),
            KeyCode::Home => self.cursor = 0,
            KeyCode::End => self.cursor = self.last(),
            KeyCode::Char(c @ '1'..='9') => {
                let i = c as usize - '1' as usize;
                if i <= self.last() {
                    self.cursor = i;
                    return if self.question.multi_select {
                        self.tick(i)
                    } else {
                        self.choose(i)
                    };
                }
            }
            KeyCode::Char(' ') if self.question.multi_select => return self.tick(self.cursor),
            KeyCode::Enter => return self.confirm(),
            KeyCode::Esc => return Step::Declined,
            _ => {}
        }
        Step::Stay
    }

    fn up(&mut self) {
        self.cursor = self.cursor.saturating_sub(1);
    }

    fn down(&mut self) {
        self.cursor = (self.cursor + 1).min(self.last());
    }

    /// Space or a number in a multi-select question: ticks the option (or starts
    /// the own answer).
    fn tick(&mut self, i: usize) -> Step {
        if i == self.own() {
            self.typing = Some(String::new());
        } else {
            self.ticked[i] = !self.ticked[i];
        }
        Step::Stay
    }

    /// A number or Enter in a single-choice question: that option is the answer
    /// (or the own answer starts).
    fn choose(&mut self, i: usize) -> Step {
        if i == self.own() {
            self.typing = Some(String::new());
            return Step::Stay;
        }
        Step::Answered(self.answer(vec![self.question.options[i].label.clone()], None))
    }

    /// Enter on the options: the one under the cursor (single choice), the ticked
    /// ones (multi-select; the one under the cursor when none is ticked).
    fn confirm(&mut self) -> Step {
        if !self.question.multi_select || self.cursor == self.own() {
            return self.choose(self.cursor);
        }
        if !self.ticked.contains(&true) {
            self.ticked[self.cursor] = true;
        }
        Step::Answered(self.answer(self.ticked_labels(), None))
    }

    /// Enter while typing: the typed answer (with the ticked options); nothing
    /// typed and nothing ticked goes back to the options.
    fn finish_typing(&mut self) -> Step {
        let text = self.typing.as_deref().unwrap_or("").trim().to_string();
        let picked = self.ticked_labels();
        if text.is_empty() {
            if picked.is_empty() {
                self.typing = None;
                return Step::Stay;
            }
            return Step::Answered(self.answer(picked, None));
        }
        Step::Answered(self.answer(picked, Some(text)))
    }

    fn ticked_labels(&self) -> Vec<String> {
        self.question
            .options
            .iter()
            .zip(&self.ticked)
            .filter(|(_, t)| **t)
            .map(|(o, _)| o.label.clone())
            .collect()
    }

    fn answer(&self, selected: Vec<String>, text: Option<String>) -> Answer {
        Answer {
            header: self.question.header.clone(),
            selected,
            text,
        }
    }

    /// The lines for a terminal `width` columns wide and `height` lines high:
    /// every description when they fit, else only the one under the cursor.
    pub fn draw(&self, p: Paint, width: usize, height: usize) -> Drawn {
        let width = width.max(MIN_WIDTH);
        let full = self.layout(p, width, true);
        if full.lines.len() < height {
            full
        } else {
            self.layout(p, width, false)
        }
    }

    fn layout(&self, p: Paint, width: usize, descriptions: bool) -> Drawn {
        let q = self.question;
        let mut lines = vec![title(p, q, self.position, width)];
        lines.extend(wrap(&q.question, width));
        for (i, option) in q.options.iter().enumerate() {
            let here = self.cursor == i;
            let tick = match (q.multi_select, self.ticked[i]) {
                (false, _) => "",
                (true, false) => "[ ] ",
                (true, true) => "[x] ",
            };
            let head = format!("{} {}. {tick}", marker(here), i + 1);
            let indent = head.width();
            let line = format!("{head}{}", fit(&option.label, width - indent));
            lines.push(if here { p.cyan(&line) } else { line });
            if (descriptions || here) && !option.description.trim().is_empty() {
                for text in description(&option.description, width - indent) {
                    lines.push(format!("{}{}", " ".repeat(indent), p.dim(&text)));
                }
            }
        }
        let own = self.own();
        let here = self.cursor == own;
        let head = format!("{} {}. ", marker(here), own + 1);
        let mut caret = None;
        match &self.typing {
            _ if !self.own_answer => {}
            Some(text) => {
                let start = head.width() + OWN_PROMPT.width();
                let shown = tail(text, width.saturating_sub(start + 1));
                caret = Some((lines.len(), start + shown.width()));
                lines.push(p.cyan(&format!("{head}{OWN_PROMPT}{shown}")));
            }
            None => {
                let line = format!("{head}{}", fit(OWN_ANSWER, width - head.width()));
                lines.push(if here { p.cyan(&line) } else { line });
            }
        }
        let keys = if self.typing.is_some() {
            "Enter done · Esc back to the options".to_string()
        } else if q.multi_select {
            format!(
                "↑↓ move · Space or 1-{} tick · Enter confirm · Esc decline",
                self.last() + 1
            )
        } else if !self.own_answer {
            format!(
                "↑↓ move · 1-{} pick · Enter confirm · Esc cancel",
                self.last() + 1
            )
        } else {
            format!("↑↓ move · 1-{} pick · Enter confirm · Esc decline", own + 1)
        };
        lines.push(p.dim(&fit(&keys, width)));
        Drawn { lines, caret }
    }
}

/// `Header · 1 of 2 · choose any`, the header bold.
fn title(p: Paint, q: &Question, position: Option<(usize, usize)>, width: usize) -> String {
    let header = fit(&q.header, width);
    let mut about = Vec::new();
    if let Some((i, n)) = position {
        about.push(format!("{i} of {n}"));
    }
    if q.multi_select {
        about.push("choose any".to_string());
    }
    if about.is_empty() {
        return p.bold(&header);
    }
    let rest = fit(
        &format!(" · {}", about.join(" · ")),
        width.saturating_sub(header.width()),
    );
    format!("{}{}", p.bold(&header), p.dim(&rest))
}

fn marker(here: bool) -> &'static str {
    if here { "›" } else { " " }
}

/// An option's description: wrapped, at most [`MAX_DESCRIPTION_LINES`] lines.
fn description(text: &str, width: usize) -> Vec<String> {
    let mut lines = wrap(text, width);
    if lines.len() > MAX_DESCRIPTION_LINES {
        lines.truncate(MAX_DESCRIPTION_LINES);
        if let Some(last) = lines.last_mut() {
            *last = fit(&format!("{last} …"), width);
        }
    }
    lines
}

/// The lines of what the person answered to `q` (`None`: declined), left on the
/// screen when the picker goes.
pub fn answered_lines(p: Paint, q: &Question, answer: Option<&Answer>) -> Vec<String> {
    let shown = match answer {
        Some(a) => {
            let mut parts = a.selected.clone();
            if let Some(text) = &a.text {
                parts.push(format!("\"{text}\""));
            }
            parts.join(", ")
        }
        None => p.yellow("declined"),
    };
    vec![
        format!("{} · {}", p.bold(&q.header), q.question),
        format!("  {} {shown}", p.green("→")),
    ]
}

/// `text` cut to `width` columns, with an ellipsis when cut.
fn fit(text: &str, width: usize) -> String {
    if text.width() <= width {
        return text.to_string();
    }
    let mut out = String::new();
    let mut used = 0;
    for c in text.chars() {
        let w = c.width().unwrap_or(0);
        if used + w + 1 > width {
            break;
        }
        out.push(c);
        used += w;
    }
    out.push('…');
    out
}

/// The end of `text` that fits in `width` columns, an ellipsis before it when cut.
fn tail(text: &str, width: usize) -> String {
    if text.width() <= width {
        return text.to_string();
    }
    let mut kept = Vec::new();
    let mut used = 1;
    for c in text.chars().rev() {
        let w = c.width().unwrap_or(0);
        if used + w > width {
            break;
        }
        kept.push(c);
        used += w;
    }
    let mut out = String::from("…");
    out.extend(kept.into_iter().rev());
    out
}

/// `text` wrapped at spaces to lines of at most `width` columns (a longer word
/// is cut).
fn wrap(text: &str, width: usize) -> Vec<String> {
    let width = width.max(1);
    let mut lines = Vec::new();
    for paragraph in text.lines() {
        let mut line = String::new();
        for word in paragraph.split_whitespace() {
            let word = fit(word, width);
            if !line.is_empty() && line.width() + 1 + word.width() > width {
                lines.push(std::mem::take(&mut line));
            }
            if !line.is_empty() {
                line.push(' ');
            }
            line.push_str(&word);
        }
        lines.push(line);
    }
    if lines.is_empty() {
        lines.push(String::new());
    }
    lines
}

/// Puts `questions` to the person, one after another, each with a [`Picker`]
/// drawn in raw mode (line by line when raw mode is not available).
pub fn ask(p: Paint, questions: &[Question]) -> Outcome {
    if terminal::enable_raw_mode().is_err() {
        return ask_by_lines(p, questions);
    }
    let mut answers = Vec::new();
    let mut outcome = None;
    for (i, q) in questions.iter().enumerate() {
        let position = (questions.len() > 1).then_some((i + 1, questions.len()));
        let mut picker = Picker::new(q, position);
        let mut view = View::default();
        let step = loop {
            view.draw(&picker, p);
            match event::read() {
                Ok(Event::Key(key)) if key.kind != KeyEventKind::Release => match picker.key(key) {
                    Step::Stay => {}
                    done => break done,
                },
                Ok(_) => {}
                Err(_) => break Step::Declined,
            }
        };
        let answer = match &step {
            Step::Answered(a) => Some(a),
            _ => None,
        };
        view.replace(&answered_lines(p, q, answer));
        match step {
            Step::Answered(a) => answers.push(a),
            Step::Interrupted => {
                outcome = Some(Outcome::Interrupted);
                break;
            }
            Step::Declined | Step::Stay => {
                outcome = Some(Outcome::Declined);
                break;
            }
        }
    }
    let _ = terminal::disable_raw_mode();
    outcome.unwrap_or(Outcome::Answered(answers))
}

/// Puts `question` to the person as a choice of its options alone (no answer
/// in one's own words), the cursor first on option `cursor`: the index of the
/// option picked, or `None` when they chose none (Esc, Ctrl-C, Ctrl-D). The
/// question and the choice stay on the screen.
pub fn choose(p: Paint, question: &Question, cursor: usize) -> Option<usize> {
    if question.options.is_empty() {
        return None;
    }
    if terminal::enable_raw_mode().is_err() {
        return choose_by_line(p, question);
    }
    let mut picker = Picker::new(question, None)
        .options_only()
        .with_cursor(cursor);
    let mut view = View::default();
    let step = loop {
        view.draw(&picker, p);
        match event::read() {
            Ok(Event::Key(key)) if key.kind != KeyEventKind::Release => match picker.key(key) {
                Step::Stay => {}
                done => break done,
            },
            Ok(_) => {}
            Err(_) => break Step::Declined,
        }
    };
    let picked = matches!(step, Step::Answered(_)).then(|| picker.cursor());
    let answer = picked.map(|i| Answer {
        header: question.header.clone(),
        selected: vec![question.options[i].label.clone()],
        text: None,
    });
    let mut lines = answered_lines(p, question, answer.as_ref());
    if answer.is_none()
        && let Some(last) = lines.last_mut()
    {
        *last = format!("  {} {}", p.green("→"), p.yellow("cancelled"));
    }
    view.replace(&lines);
    let _ = terminal::disable_raw_mode();
    picked
}

/// Without raw mode: the options printed whole, one picked by its number.
fn choose_by_line(p: Paint, q: &Question) -> Option<usize> {
    println!("{}", title(p, q, None, usize::MAX));
    println!("{}", q.question);
    for (n, option) in q.options.iter().enumerate() {
        println!("  {}. {}", n + 1, option.label);
    }
    print!("A number (an empty line cancels): ");
    let _ = std::io::stdout().flush();
    let mut line = String::new();
    if std::io::stdin().lock().read_line(&mut line).unwrap_or(0) == 0 {
        return None;
    }
    line.trim()
        .parse::<usize>()
        .ok()
        .filter(|n| (1..=q.options.len()).contains(n))
        .map(|n| n - 1)
}

/// A picker on the terminal in raw mode: how far its first line is above the
/// cursor, to redraw it in place.
#[derive(Debug, Default)]
struct View {
    /// Lines from the picker's first line down to the cursor's; `None`: not
    /// drawn yet.
    row: Option<usize>,
}

impl View {
    fn draw(&mut self, picker: &Picker<'_>, p: Paint) {
        let (width, height) =
            terminal::size().map_or((80, 24), |(w, h)| (usize::from(w), usize::from(h)));
        // The last column is left alone: a line that fills it wraps on some
        // terminals, and the redraw would miscount.
        let drawn = picker.draw(p, width.saturating_sub(1), height);
        let mut out = std::io::stdout().lock();
        self.rewind(&mut out);
        for line in &drawn.lines {
            let _ = crossterm::queue!(out, Print(line), Print("\r\n"));
        }
        match drawn.caret {
            Some((line, column)) => {
                let up = u16::try_from(drawn.lines.len() - line).unwrap_or(u16::MAX);
                let column = u16::try_from(column).unwrap_or(u16::MAX);
                let _ = crossterm::queue!(out, MoveToPreviousLine(up), MoveToColumn(column), Show);
                self.row = Some(line);
            }
            None => {
                let _ = crossterm::queue!(out, Hide);
                self.row = Some(drawn.lines.len());
            }
        }
        let _ = out.flush();
    }

    /// The picker replaced by `lines`, the cursor shown on the line after them.
    fn replace(&mut self, lines: &[String]) {
        let mut out = std::io::stdout().lock();
        self.rewind(&mut out);
        for line in lines {
            let _ = crossterm::queue!(out, Print(line), Print("\r\n"));
        }
        let _ = crossterm::queue!(out, Show);
        let _ = out.flush();
    }

    /// Back to the picker's first line, cleared from there down.
    fn rewind(&mut self, out: &mut impl Write) {
        match self.row.take() {
            Some(0) | None => {
                let _ = crossterm::queue!(out, MoveToColumn(0));
            }
            Some(n) => {
                let _ = crossterm::queue!(
                    out,
                    MoveToPreviousLine(u16::try_from(n).unwrap_or(u16::MAX))
                );
            }
        }
        let _ = crossterm::queue!(out, Clear(ClearType::FromCursorDown));
    }
}

/// Without raw mode: each question printed whole, answered by a line.
fn ask_by_lines(p: Paint, questions: &[Question]) -> Outcome {
    let mut answers = Vec::new();
    let stdin = std::io::stdin();
    for (i, q) in questions.iter().enumerate() {
        let position = (questions.len() > 1).then_some((i + 1, questions.len()));
        println!("{}", title(p, q, position, usize::MAX));
        println!("{}", q.question);
        for (n, option) in q.options.iter().enumerate() {
            if option.description.trim().is_empty() {
                println!("  {}. {}", n + 1, option.label);
            } else {
                println!(
                    "  {}. {} {}",
                    n + 1,
                    option.label,
                    p.dim(&format!("— {}", option.description))
                );
            }
        }
        let how = if q.multi_select {
            "numbers separated by spaces"
        } else {
            "a number"
        };
        print!("Answer with {how}, or in your own words (an empty line declines): ");
        let _ = std::io::stdout().flush();
        let mut line = String::new();
        if stdin.lock().read_line(&mut line).unwrap_or(0) == 0 {
            return Outcome::Declined;
        }
        match line_answer(q, &line) {
            Some(answer) => answers.push(answer),
            None => return Outcome::Declined,
        }
    }
    Outcome::Answered(answers)
}

/// The answer a typed line gives `q`: its options' numbers (one, unless the
/// question is multi-select), else the line as the person's own words; `None`
/// for an empty line.
fn line_answer(q: &Question, line: &str) -> Option<Answer> {
    let line = line.trim();
    if line.is_empty() {
        return None;
    }
    let numbers: Option<Vec<usize>> = line
        .split(|c: char| c == ',' || c.is_whitespace())
        .filter(|s| !s.is_empty())
        .map(|s| {
            s.parse::<usize>()
                .ok()
                .filter(|n| (1..=q.options.len()).contains(n))
        })
        .collect();
    let picked = numbers.filter(|n| q.multi_select || n.len() == 1);
    let (selected, text) = match picked {
        Some(numbers) => {
            let mut labels: Vec<String> = Vec::new();
            for n in numbers {
                let label = &q.options[n - 1].label;
                if !labels.contains(label) {
                    labels.push(label.clone());
                }
            }
            (labels, None)
        }
        None => (Vec::new(), Some(line.to_string())),
    };
    Some(Answer {
        header: q.header.clone(),
        selected,
        text,
    })
}

#[cfg(test)]
mod tests {
    use pretty_assertions::assert_eq;
    use toolbelt_core::QuestionOption;

    use super::*;

    const PLAIN: Paint = Paint { color: false };

    fn question(multi_select: bool) -> Question {
        let option = |label: &str, description: &str| QuestionOption {
            label: label.into(),
            description: description.into(),
        };
        Question {
            header: "Database".into(),
            question: "Which database should the service use?".into(),
            options: vec![
                option("PostgreSQL", "A server; the team runs one already."),
                option("SQLite", "One file, nothing to run."),
                option("None", ""),
            ],
            multi_select,
        }
    }

    fn press(picker: &mut Picker<'_>, code: KeyCode) -> Step {
        picker.key(KeyEvent::new(code, KeyModifiers::NONE))
    }

    fn answer(selected: &[&str], text: Option<&str>) -> Step {
        Step::Answered(Answer {
            header: "Database".into(),
            selected: selected.iter().map(|s| s.to_string()).collect(),
            text: text.map(str::to_string),
        })
    }

    #[test]
    fn a_single_choice_is_picked_by_arrows_or_its_number() {
        let q = question(false);
        let mut picker = Picker::new(&q, Some((1, 2)));
        assert_eq!(press(&mut picker, KeyCode::Down), Step::Stay);
        assert_eq!(press(&mut picker, KeyCode::Char('j')), Step::Stay);
        assert_eq!(press(&mut picker, KeyCode::Char('k')), Step::Stay);
        // Space does nothing in a single-choice question.
        assert_eq!(press(&mut picker, KeyCode::Char(' ')), Step::Stay);
        assert_eq!(
            press(&mut picker, KeyCode::Enter),
            answer(&["SQLite"], None)
        );
        let mut picker = Picker::new(&q, None);
        assert_eq!(
            press(&mut picker, KeyCode::Char('3')),
            answer(&["None"], None)
        );
        // Past the entries, a number does nothing.
        let mut picker = Picker::new(&q, None);
        assert_eq!(press(&mut picker, KeyCode::Char('9')), Step::Stay);
        assert_eq!(press(&mut picker, KeyCode::Esc), Step::Declined);
    }

    #[test]
    fn a_multi_select_ticks_with_space_or_numbers() {
        let q = question(true);
        let mut picker = Picker::new(&q, None);
        assert_eq!(press(&mut picker, KeyCode::Char(' ')), Step::Stay);
        assert_eq!(press(&mut picker, KeyCode::Char('3')), Step::Stay);
        assert_eq!(press(&mut picker, KeyCode::Char('2')), Step::Stay);
        assert_eq!(press(&mut picker, KeyCode::Char('2')), Step::Stay);
        assert_eq!(
            press(&mut picker, KeyCode::Enter),
            answer(&["PostgreSQL", "None"], None)
        );
        // Nothing ticked: Enter takes the option under the cursor.
        let mut picker = Picker::new(&q, None);
        press(&mut picker, KeyCode::Down);
        assert_eq!(
            press(&mut picker, KeyCode::Enter),
            answer(&["SQLite"], None)
        );
    }

    #[test]
    fn the_own_answer_is_typed() {
        let q = question(false);
        let mut picker = Picker::new(&q, None);
        assert_eq!(press(&mut picker, KeyCode::Char('4')), Step::Stay);
        for c in "Redis, nope".chars() {
            press(&mut picker, KeyCode::Char(c));
        }
        assert_eq!(
            picker.key(KeyEvent::new(KeyCode::Char('w'), KeyModifiers::CONTROL)),
            Step::Stay
        );
        for c in "maybx".chars() {
            press(&mut picker, KeyCode::Char(c));
        }
        press(&mut picker, KeyCode::Backspace);
        for c in "e ".chars() {
            press(&mut picker, KeyCode::Char(c));
        }
        assert_eq!(
            press(&mut picker, KeyCode::Enter),
            answer(&[], Some("Redis, maybe"))
        );
        // Esc while typing goes back to the options; an empty answer too.
        let mut picker = Picker::new(&q, None);
        press(&mut picker, KeyCode::End);
        press(&mut picker, KeyCode::Enter);
        press(&mut picker, KeyCode::Char('x'));
        assert_eq!(press(&mut picker, KeyCode::Esc), Step::Stay);
        assert_eq!(picker.typing, None);
        press(&mut picker, KeyCode::Enter);
        assert_eq!(press(&mut picker, KeyCode::Enter), Step::Stay);
        assert_eq!(picker.typing, None);
        // In a multi-select question the words join the ticked options.
        let q = question(true);
        let mut picker = Picker::new(&q, None);
        press(&mut picker, KeyCode::Char('2'));
        press(&mut picker, KeyCode::Char('4'));
        for c in "and Redis".chars() {
            press(&mut picker, KeyCode::Char(c));
        }
        assert_eq!(
            press(&mut picker, KeyCode::Enter),
            answer(&["SQLite"], Some("and Redis"))
        );
    }

    #[test]
    fn a_choice_of_options_only_has_no_own_answer() {
        let q = question(false);
        let mut picker = Picker::new(&q, None).options_only().with_cursor(9);
        assert_eq!(picker.cursor(), 2);
        assert_eq!(press(&mut picker, KeyCode::Down), Step::Stay);
        assert_eq!(picker.cursor(), 2);
        // The number past the options does nothing; End stays on the last one.
        assert_eq!(press(&mut picker, KeyCode::Char('4')), Step::Stay);
        press(&mut picker, KeyCode::Home);
        press(&mut picker, KeyCode::End);
        assert_eq!(picker.cursor(), 2);
        assert_eq!(
            picker.draw(PLAIN, 79, 40).lines,
            vec![
                "Database",
                "Which database should the service use?",
                "  1. PostgreSQL",
                "     A server; the team runs one already.",
                "  2. SQLite",
                "     One file, nothing to run.",
                "› 3. None",
                "↑↓ move · 1-3 pick · Enter confirm · Esc cancel",
            ]
        );
        assert_eq!(
            press(&mut picker, KeyCode::Char('2')),
            answer(&["SQLite"], None)
        );
        assert_eq!(picker.cursor(), 1);
    }

    #[test]
    fn ctrl_c_interrupts_and_ctrl_d_declines() {
        let q = question(false);
        let mut picker = Picker::new(&q, None);
        let ctrl = |c| KeyEvent::new(KeyCode::Char(c), KeyModifiers::CONTROL);
        assert_eq!(picker.key(ctrl('c')), Step::Interrupted);
        assert_eq!(picker.key(ctrl('d')), Step::Declined);
        press(&mut picker, KeyCode::Char('4'));
        assert_eq!(picker.key(ctrl('c')), Step::Interrupted);
    }

    #[test]
    fn the_picker_fits_80_columns() {
        let q = question(false);
        let mut picker = Picker::new(&q, Some((1, 2)));
        press(&mut picker, KeyCode::Down);
        let drawn = picker.draw(PLAIN, 79, 40);
        assert_eq!(
            drawn.lines,
            vec![
                "Database · 1 of 2",
                "Which database should the service use?",
                "  1. PostgreSQL",
                "     A server; the team runs one already.",
                "› 2. SQLite",
                "     One file, nothing to run.",
                "  3. None",
                "  4. Type your own answer",
                "↑↓ move · 1-4 pick · Enter confirm · Esc decline",
            ]
        );
        assert_eq!(drawn.caret, None);
        // Too few lines: only the description under the cursor.
        let drawn = picker.draw(PLAIN, 79, 9);
        assert_eq!(drawn.lines.len(), 8);
        assert!(
            drawn
                .lines
                .contains(&"     One file, nothing to run.".to_string())
        );

        let q = question(true);
        let mut picker = Picker::new(&q, None);
        press(&mut picker, KeyCode::Char(' '));
        press(&mut picker, KeyCode::Char('4'));
        for c in "Redis".chars() {
            press(&mut picker, KeyCode::Char(c));
        }
        let drawn = picker.draw(PLAIN, 79, 40);
        assert_eq!(drawn.lines[0], "Database · choose any");
        assert_eq!(drawn.lines[2], "  1. [x] PostgreSQL");
        assert_eq!(
            drawn.lines[3],
            "         A server; the team runs one already."
        );
        assert_eq!(drawn.lines[7], "› 4. Your answer: Redis");
        assert_eq!(drawn.caret, Some((7, "› 4. Your answer: Redis".width())));
        assert_eq!(drawn.lines[8], "Enter done · Esc back to the options");
    }

    #[test]
    fn long_text_is_wrapped_or_cut_to_the_width() {
        let mut q = question(false);
        q.question = "word ".repeat(30).trim().to_string();
        q.options[0].description = "long ".repeat(60).trim().to_string();
        q.options[1].label = "x".repeat(100);
        let mut picker = Picker::new(&q, None);
        press(&mut picker, KeyCode::Char('4'));
        for _ in 0..100 {
            press(&mut picker, KeyCode::Char('y'));
        }
        let drawn = picker.draw(PLAIN, 40, 40);
        for line in &drawn.lines {
            assert!(line.width() <= 40, "{line:?} is wider than 40");
        }
        // The question whole on four lines, the description on two.
        assert_eq!(
            drawn.lines.iter().filter(|l| l.starts_with("word")).count(),
            4
        );
        assert_eq!(
            drawn.lines.iter().filter(|l| l.contains("long")).count(),
            MAX_DESCRIPTION_LINES
        );
        let (line, column) = drawn.caret.unwrap();
        assert!(drawn.lines[line].ends_with("yyy"));
        assert_eq!(column, drawn.lines[line].width());
        assert!(column < 40);
        assert_eq!(fit("ab界cd", 4), "ab…");
        assert_eq!(tail("abcdef", 4), "…def");
        assert_eq!(wrap("one two three", 7), vec!["one two", "three"]);
    }

    #[test]
    fn what_is_left_on_the_screen() {
        let q = question(true);
        let a = Answer {
            header: "Database".into(),
            selected: vec!["SQLite".into()],
            text: Some("and Redis".into()),
        };
        assert_eq!(
            answered_lines(PLAIN, &q, Some(&a)),
            vec![
                "Database · Which database should the service use?",
                "  → SQLite, \"and Redis\"",
            ]
        );
        assert_eq!(answered_lines(PLAIN, &q, None)[1], "  → declined");
    }

    #[test]
    fn a_line_answers_by_numbers_or_words() {
        let single = question(false);
        let multi = question(true);
        let labels = |a: Option<Answer>| a.map(|a| (a.selected, a.text));
        assert_eq!(
            labels(line_answer(&single, " 2\n")),
            Some((vec!["SQLite".to_string()], None))
        );
        assert_eq!(
            labels(line_answer(&single, "1 2")),
            Some((vec![], Some("1 2".to_string())))
        );
        assert_eq!(
            labels(line_answer(&multi, "1, 3 1")),
            Some((vec!["PostgreSQL".to_string(), "None".to_string()], None))
        );
        assert_eq!(
            labels(line_answer(&multi, "Redis")),
            Some((vec![], Some("Redis".to_string())))
        );
        assert_eq!(labels(line_answer(&multi, "  ")), None);
    }
}
