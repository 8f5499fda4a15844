//! The questions of `ask_user` on the interactive screen ([`Prompted`]), and the
//! answer of runs nobody watches ([`Unattended`]).
//!
//! As with approvals, the asker does not read the terminal itself: it sends the
//! questions to the screen's thread as a [`UiEvent::Questions`] and waits for the
//! answers the screen's picker reads.

use tokio::sync::oneshot;
use toolbelt_core::{Answers, AskError, Asker, BoxFuture, Question};

use super::event::{UiEvent, UiTx};

/// Why a `-p` run cannot put questions to anyone.
pub const UNATTENDED: &str = "the run is unattended (-p): nobody is at the terminal";

/// Puts each set of questions to the person on the screen and waits for the
/// answers.
#[derive(Debug)]
pub struct Prompted {
    screen: UiTx,
}

impl Prompted {
    /// An asker that asks through `screen`.
    pub fn new(screen: UiTx) -> Prompted {
        Prompted { screen }
    }
}

impl Asker for Prompted {
    fn ask<'a>(&'a self, questions: &'a [Question]) -> BoxFuture<'a, Result<Answers, AskError>> {
        Box::pin(async move {
            let (tx, rx) = oneshot::channel();
            if self
                .screen
                .send(UiEvent::Questions(questions.to_vec(), tx))
                .is_err()
            {
                return Err(AskError::Unsupported("the terminal was closed".into()));
            }
            rx.await.map_err(|_| {
                AskError::Failed("the run was interrupted before anyone answered".into())
            })
        })
    }
}

/// The asker of a `-p` run: nobody is there, so the model is told to ask in its
/// reply.
#[derive(Debug, Clone, Copy)]
pub struct Unattended;

impl Asker for Unattended {
    fn ask<'a>(&'a self, _questions: &'a [Question]) -> BoxFuture<'a, Result<Answers, AskError>> {
        Box::pin(std::future::ready(Err(AskError::Unsupported(
            UNATTENDED.into(),
        ))))
    }
}

#[cfg(test)]
mod tests {
    use pretty_assertions::assert_eq;
    use toolbelt_core::{Answer, QuestionOption};

    use super::*;

    fn question() -> Question {
        Question {
            header: "Database".into(),
            question: "Which database?".into(),
            options: vec![
                QuestionOption {
                    label: "PostgreSQL".into(),
                    description: String::new(),
                },
                QuestionOption {
                    label: "SQLite".into(),
                    description: String::new(),
                },
            ],
            multi_select: false,
        }
    }

    #[tokio::test]
    async fn questions_go_to_the_screen_and_the_answers_come_back() {
        let (tx, rx) = std::sync::mpsc::channel();
        let asker = Prompted::new(tx);
        let screen = std::thread::spawn(move || match rx.recv().unwrap() {
            UiEvent::Questions(questions, reply) => {
                assert_eq!(questions, vec![question()]);
                reply
                    .send(Answers::Answered(vec![Answer {
                        header: "Database".into(),
                        selected: vec!["SQLite".into()],
                        text: None,
                    }]))
                    .unwrap();
            }
            _ => panic!("expected questions"),
        });
        let questions = [question()];
        let answers =
            tokio::time::timeout(std::time::Duration::from_secs(10), asker.ask(&questions))
                .await
                .unwrap()
                .unwrap();
        screen.join().unwrap();
        let Answers::Answered(answers) = answers else {
            panic!("{answers:?}");
        };
        assert_eq!(answers[0].selected, vec!["SQLite".to_string()]);
    }

    #[tokio::test]
    async fn without_a_screen_or_an_answer_the_asking_fails() {
        let (tx, rx) = std::sync::mpsc::channel();
        drop(rx);
        let questions = [question()];
        assert!(matches!(
            Prompted::new(tx).ask(&questions).await,
            Err(AskError::Unsupported(_))
        ));
        // The screen drops the question unanswered (the run was left).
        let (tx, rx) = std::sync::mpsc::channel();
        let asker = Prompted::new(tx);
        let screen = std::thread::spawn(move || drop(rx.recv().unwrap()));
        assert!(matches!(
            asker.ask(&questions).await,
            Err(AskError::Failed(_))
        ));
        screen.join().unwrap();
    }

    #[tokio::test]
    async fn an_unattended_run_has_nobody_to_ask() {
        assert_eq!(
            Unattended.ask(&[question()]).await,
            Err(AskError::Unsupported(UNATTENDED.into()))
        );
    }
}
