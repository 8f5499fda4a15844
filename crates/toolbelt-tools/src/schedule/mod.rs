//! The schedule toolset: [`Cron`] adds, lists, removes and fires jobs kept in the
//! store and fired by `toolbelt serve` ([`toolbelt_sched::Scheduler`]).

pub(crate) mod cron;
