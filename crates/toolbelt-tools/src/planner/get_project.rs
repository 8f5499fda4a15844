//! `get_project`: one project, optionally with its task stats.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use toolbelt_core::{Category, Hints, Reply, ToolContext, ToolResult, ToolSpec, TypedTool};
use toolbelt_store::{GoalStage, Kind, ProjectStats};

use crate::planner::{ProjectData, one_line, parse_id, project_line, rfc3339};
use crate::stored::store_tool;

/// Arguments of `get_project`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct GetProjectParams {
    /// The project, e.g. `project-3`.
    pub project_id: String,
    /// Add task counts, the completion rate, overdue tasks and the linked goals.
    #[serde(default)]
    pub include_stats: bool,
}

/// A pending task past its due date.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct OverdueTaskData {
    /// `task-N`.
    pub id: String,
    /// What to do.
    pub title: String,
    /// When it was due (RFC 3339, UTC).
    pub due_date: String,
}

/// A goal the project serves.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct LinkedGoalData {
    /// `goal-N`.
    pub id: String,
    /// What it is.
    pub title: String,
    /// `life`, `yearly` or `quarter`.
    pub stage: GoalStage,
    /// `YYYY-MM-DD`.
    pub deadline: Option<String>,
}

/// Where a project stands.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct ProjectStatsData {
    /// Tasks not done yet.
    pub pending: u64,
    /// Tasks done.
    pub completed: u64,
    /// All its tasks.
    pub total: u64,
    /// completed / total, from 0 to 1, rounded to 3 decimals; 0 without tasks.
    pub completion_rate: f64,
    /// How many pending tasks are past their due date.
    pub overdue_count: u64,
    /// The overdue tasks, earliest due first (at most 20 listed).
    pub overdue: Vec<OverdueTaskData>,
    /// The goals the project serves.
    pub goals: Vec<LinkedGoalData>,
}

impl From<&ProjectStats> for ProjectStatsData {
    fn from(s: &ProjectStats) -> ProjectStatsData {
        ProjectStatsData {
            pending: s.pending,
            completed: s.completed,
            total: s.total,
            completion_rate: s.completion_rate,
            overdue_count: s.overdue_count,
            overdue: s
                .overdue
                .iter()
                .map(|o| OverdueTaskData {
                    id: o.id.to_string(),
                    title: o.title.clone(),
                    due_date: rfc3339(o.due_at),
                })
                .collect(),
            goals: s
                .goals
                .iter()
                .map(|g| LinkedGoalData {
                    id: g.id.to_string(),
                    title: g.title.clone(),
                    stage: g.stage,
                    deadline: g.deadline.clone(),
                })
                .collect(),
        }
    }
}

/// Result of `get_project`.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct GetProjectOutput {
    /// The project.
    pub project: ProjectData,
    /// Its stats, when `include_stats` was set.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stats: Option<ProjectStatsData>,
}

store_tool! {
    /// The `get_project` tool.
    GetProject
}

fn stats_text(s: &ProjectStats) -> String {
    let mut text = format!(
        "Tasks: {} ({} pending, {} completed), {:.1}% complete.",
        s.total,
        s.pending,
        s.completed,
        s.completion_rate * 100.0
    );
    if s.overdue_count == 0 {
        text.push_str("\nOverdue: none.");
    } else {
        text.push_str(&format!("\nOverdue: {}", s.overdue_count));
        for o in &s.overdue {
            text.push_str(&format!(
                "\n- {} due {}: {}",
                o.id,
                rfc3339(o.due_at),
                one_line(&o.title)
            ));
        }
        let more = s.overdue_count.saturating_sub(s.overdue.len() as u64);
        if more > 0 {
            text.push_str(&format!(
                "\n- ... and {more} more (list_tasks with project_id, status pending and due_before now lists them)"
            ));
        }
    }
    if s.goals.is_empty() {
        text.push_str("\nGoals: none linked.");
    } else {
        text.push_str("\nGoals:");
        for g in &s.goals {
            let deadline = g
                .deadline
                .as_deref()
                .map(|d| format!(", deadline {d}"))
                .unwrap_or_default();
            text.push_str(&format!(
                "\n- {} [{}{deadline}] {}",
                g.id,
                g.stage,
                one_line(&g.title)
            ));
        }
    }
    text
}

impl TypedTool for GetProject {
    type Params = GetProjectParams;
    type Output = GetProjectOutput;

    fn spec(&self) -> ToolSpec {
        ToolSpec::describe("get_project", include_str!("get_project.md"))
            .title("Get Project")
            .category(Category::Project)
            .permission("store:read")
            .key_argument("project_id")
            .hints(Hints::read_only())
            .example(
                "A project with its stats",
                serde_json::json!({"project_id": "project-1", "include_stats": true}),
                serde_json::json!({
                    "project": {
                        "id": "project-1",
                        "name": "Toolbelt 1.0",
                        "description": "Ship the first stable release",
                        "status": "paused",
                        "goal_ids": ["goal-1", "goal-2"],
                        "created_at": "2026-05-04T09:30:00Z",
                        "updated_at": "2026-05-06T16:02:11Z"
                    },
                    "stats": {
                        "pending": 1,
                        "completed": 1,
                        "total": 2,
                        "completion_rate": 0.5,
                        "overdue_count": 0,
                        "overdue": [],
                        "goals": [
                            {"id": "goal-1", "title": "Become fluent in Rust", "stage": "yearly", "deadline": "2027-12-31"},
                            {"id": "goal-2", "title": "Ship toolbelt 1.0", "stage": "quarter", "deadline": "2027-06-30"}
                        ]
                    }
                }),
            )
    }

    async fn call(&self, _ctx: &ToolContext, p: GetProjectParams) -> ToolResult<GetProjectOutput> {
        let id = parse_id(Kind::Project, &p.project_id)?;
        let store = self.store.get().await?;
        let (project, stats) = if p.include_stats {
            let (project, stats) = store
                .project_with_stats(id, toolbelt_store::now_ms())
                .await?;
            (project, Some(stats))
        } else {
            (store.project(id).await?, None)
        };
        let mut text = project_line(&project);
        if let Some(d) = &project.description {
            text.push_str(&format!("\nDescription: {}", one_line(d)));
        }
        text.push_str(&format!(
            "\nCreated {}, updated {}.",
            rfc3339(project.created_at),
            rfc3339(project.updated_at)
        ));
        if let Some(s) = &stats {
            text.push('\n');
            text.push_str(&stats_text(s));
        }
        Ok(Reply::new(
            GetProjectOutput {
                project: ProjectData::from(&project),
                stats: stats.as_ref().map(ProjectStatsData::from),
            },
            text,
        ))
    }
}
