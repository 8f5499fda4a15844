//! The [`Tool`] trait, typed tools ([`TypedTool`] + [`Typed`]) and plain-function
//! tools ([`FnTool`]).

use std::collections::BTreeMap;
use std::fmt;
use std::future::Future;
use std::marker::PhantomData;
use std::pin::Pin;

use schemars::JsonSchema;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

use crate::checkpoint::Changes;
use crate::context::ToolContext;
use crate::envelope::{Envelope, ErrorCode};
use crate::error::error_chain;
use crate::schema::schema_for;
use crate::spec::ToolSpec;

/// A boxed, sendable future.
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// One problem with a call's arguments, at a path like `todos[1].status`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Violation {
    /// Where (empty for the arguments as a whole).
    pub path: String,
    /// What is wrong.
    pub message: String,
}

impl Violation {
    /// A violation at `path`.
    pub fn new(path: impl Into<String>, message: impl Into<String>) -> Violation {
        Violation {
            path: path.into(),
            message: message.into(),
        }
    }
}

impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.path.is_empty() {
            write!(f, "(arguments): {}", self.message)
        } else {
            write!(f, "{}: {}", self.path, self.message)
        }
    }
}

/// A tool as the registry sees it. Most tools implement [`TypedTool`] instead and
/// are wrapped in [`Typed`]; implement this directly for full control.
pub trait Tool: Send + Sync + 'static {
    /// The tool's spec.
    fn spec(&self) -> &ToolSpec;

    /// The spec as it is now, for a tool whose description follows something that
    /// changes while it is served (the skills on disk, the agent types): `None`
    /// (the default) means [`Tool::spec`]. Its name, schema and hints must stay
    /// those of [`Tool::spec`]; only the description and title may change.
    fn current_spec(&self) -> Option<ToolSpec> {
        None
    }

    /// A number that changes whenever [`Tool::current_spec`] would give something
    /// new; servers poll it to tell clients the tool list changed. Cheap to call.
    fn revision(&self) -> u64 {
        0
    }

    /// Checks rules the schema cannot express (`start_line <= end_line`). Runs after
    /// schema validation.
    fn validate(&self, _args: &Value) -> Vec<Violation> {
        Vec::new()
    }

    /// The one argument a UI shows for a call. Defaults to the spec's `key_argument` field.
    fn key_argument(&self, args: &Value) -> Option<String> {
        let field = self.spec().key_argument.as_deref()?;
        match args.get(field)? {
            Value::String(s) if !s.is_empty() => Some(s.clone()),
            Value::String(_) | Value::Null => None,
            other => Some(other.to_string()),
        }
    }

    /// The specifier permission rules match against (`tool(specifier)`): the spec's
    /// `permission_argument` when it names one, else the key argument.
    fn permission_subject(&self, args: &Value) -> Option<String> {
        let Some(field) = self.spec().permission_argument.as_deref() else {
            return self.key_argument(args);
        };
        match args.get(field)? {
            Value::String(s) if !s.is_empty() => Some(s.clone()),
            Value::String(_) | Value::Null => None,
            other => Some(other.to_string()),
        }
    }

    /// What a call with `args` may change on disk, for its checkpoint. The default
    /// reads the spec: nothing for a read-only tool or one that neither writes files
    /// (`fs:write`), runs commands (`shell:exec`) nor is another server's (`mcp:*`);
    /// anything in the workspace for the others. A tool that knows its paths says
    /// so, and a shell tool says [`Changes::Nothing`] for a command that only reads.
    fn changes(&self, _args: &Value) -> Changes {
        default_changes(self.spec())
    }

    /// Runs the call. The registry has already repaired and validated `args`, and
    /// fills in `stats.time_ms` and `context` of the returned envelope.
    fn call<'a>(&'a self, ctx: &'a ToolContext, args: Value) -> BoxFuture<'a, Envelope>;
}

/// What a tool described by `spec` may change when it does not say: see
/// [`Tool::changes`].
pub fn default_changes(spec: &ToolSpec) -> Changes {
    let may_change = !spec.hints.read_only
        && spec
            .permissions
            .iter()
            .any(|p| p == "fs:write" || p == "shell:exec" || p.starts_with("mcp:"));
    if may_change {
        Changes::Unknown
    } else {
        Changes::Nothing
    }
}

/// A failure a tool reports to the model.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolError {
    /// The error code.
    pub code: ErrorCode,
    /// What went wrong.
    pub message: String,
    /// What to do next.
    pub hint: Option<String>,
    /// Extra machine-readable detail, placed in the envelope's `data`.
    pub data: Option<Value>,
    /// What the model reads before the error line, when the failure produced
    /// something worth reading (a failed command's output).
    pub text: Option<String>,
}

impl ToolError {
    /// An error with a code and message.
    pub fn new(code: ErrorCode, message: impl Into<String>) -> ToolError {
        ToolError {
            code,
            message: message.into(),
            hint: None,
            data: None,
            text: None,
        }
    }

    /// Adds what to do next.
    pub fn hint(mut self, hint: impl Into<String>) -> ToolError {
        self.hint = Some(hint.into());
        self
    }

    /// Adds machine-readable detail.
    pub fn data(mut self, data: Value) -> ToolError {
        self.data = Some(data);
        self
    }

    /// Adds what the model reads before the error line.
    pub fn text(mut self, text: impl Into<String>) -> ToolError {
        self.text = Some(text.into());
        self
    }

    /// The error as an envelope. With [`ToolError::text`], the envelope's text is
    /// that text, then the error line and the hint.
    pub fn into_envelope(self) -> Envelope {
        let mut env = Envelope::error(self.code, self.message, self.hint);
        if let Some(d) = self.data {
            env.data = d;
        }
        if let Some(text) = self.text {
            let mut full = text;
            if !full.is_empty() && !full.ends_with('\n') {
                full.push('\n');
            }
            full.push_str(&env.text);
            env.text = full;
        }
        env
    }
}

impl fmt::Display for ToolError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.code, self.message)
    }
}

impl std::error::Error for ToolError {}

/// A successful result of a typed tool: the data, the text the model reads,
/// and optional counters and context.
#[derive(Debug, Clone)]
pub struct Reply<T> {
    /// The machine-readable result.
    pub data: T,
    /// What the model reads.
    pub text: String,
    /// Useful but incomplete.
    pub partial: bool,
    /// Counters for `stats`.
    pub stats: BTreeMap<String, Value>,
    /// Extra members for `context` (e.g. `path_resolved`).
    pub context: Map<String, Value>,
}

impl<T> Reply<T> {
    /// A complete result.
    pub fn new(data: T, text: impl Into<String>) -> Reply<T> {
        Reply {
            data,
            text: text.into(),
            partial: false,
            stats: BTreeMap::new(),
            context: Map::new(),
        }
    }

    /// Marks the result partial.
    pub fn partial(mut self, partial: bool) -> Reply<T> {
        self.partial = partial;
        self
    }

    /// Adds a counter.
    pub fn stat(mut self, key: impl Into<String>, value: impl Into<Value>) -> Reply<T> {
        self.stats.insert(key.into(), value.into());
        self
    }

    /// Adds a context member.
    pub fn context(mut self, key: impl Into<String>, value: impl Into<Value>) -> Reply<T> {
        self.context.insert(key.into(), value.into());
        self
    }
}

impl<T: Serialize> Reply<T> {
    /// The reply as an envelope.
    pub fn into_envelope(self) -> Envelope {
        let data = match serde_json::to_value(&self.data) {
            Ok(v) => v,
            Err(e) => {
                return Envelope::error(
                    ErrorCode::Internal,
                    format!(
                        "the tool's result could not be serialized: {}",
                        error_chain(&e)
                    ),
                    None,
                );
            }
        };
        let mut env = if self.partial {
            Envelope::partial(data, self.text)
        } else {
            Envelope::success(data, self.text)
        };
        env.stats.counters = self.stats;
        env.context.extra = self.context;
        env
    }
}

/// What a typed tool returns.
pub type ToolResult<T> = Result<Reply<T>, ToolError>;

/// A tool with typed parameters and output; the schemas are derived from the types.
///
/// ```
/// use schemars::JsonSchema;
/// use serde::{Deserialize, Serialize};
/// use toolbelt_core::{Reply, ToolContext, ToolResult, ToolSpec, TypedTool};
///
/// #[derive(Deserialize, JsonSchema)]
/// struct Params { /// Who to greet.
///     name: String }
/// #[derive(Serialize, JsonSchema)]
/// struct Out { greeting: String }
///
/// struct Greet;
/// impl TypedTool for Greet {
///     type Params = Params;
///     type Output = Out;
///     fn spec(&self) -> ToolSpec { ToolSpec::describe("greet", "Greets someone.") }
///     async fn call(&self, _ctx: &ToolContext, p: Params) -> ToolResult<Out> {
///         let greeting = format!("Hello, {}!", p.name);
///         Ok(Reply::new(Out { greeting: greeting.clone() }, greeting))
///     }
/// }
/// ```
pub trait TypedTool: Send + Sync + 'static {
    /// The arguments.
    type Params: DeserializeOwned + JsonSchema + Send;
    /// The `data` of a successful result.
    type Output: Serialize + JsonSchema + Send;

    /// Everything but the schemas, which [`Typed`] derives from the types.
    fn spec(&self) -> ToolSpec;

    /// Rules beyond the schema.
    fn validate(&self, _params: &Self::Params) -> Vec<Violation> {
        Vec::new()
    }

    /// What a call with these (validated) arguments may change on disk: see
    /// [`Tool::changes`]. `None` (the default) reads it from the spec.
    fn changes(&self, _args: &Value) -> Option<Changes> {
        None
    }

    /// Runs the call.
    fn call(
        &self,
        ctx: &ToolContext,
        params: Self::Params,
    ) -> impl Future<Output = ToolResult<Self::Output>> + Send;
}

/// Adapts a [`TypedTool`] to [`Tool`], with schemas derived from its types. Object
/// schemas of the arguments are closed (`additionalProperties: false`) so that a
/// misspelt argument is reported rather than silently ignored.
pub struct Typed<T: TypedTool> {
    inner: T,
    spec: ToolSpec,
}

impl<T: TypedTool> fmt::Debug for Typed<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Typed")
            .field("name", &self.spec.name)
            .finish_non_exhaustive()
    }
}

impl<T: TypedTool> Typed<T> {
    /// Wraps `inner`, deriving the input and output schemas.
    pub fn new(inner: T) -> Typed<T> {
        let mut spec = inner.spec();
        spec.input_schema = schema_for::<T::Params>();
        crate::schema::close_objects(&mut spec.input_schema);
        spec.output_schema = Some(schema_for::<T::Output>());
        Typed { inner, spec }
    }

    /// The wrapped tool.
    pub fn inner(&self) -> &T {
        &self.inner
    }
}

fn parse_params<P: DeserializeOwned>(args: Value) -> Result<P, Box<Envelope>> {
    serde_json::from_value(args).map_err(|e| {
        Box::new(Envelope::error(
            ErrorCode::InvalidParams,
            format!("invalid arguments: {}", error_chain(&e)),
            Some("check the tool's input schema".into()),
        ))
    })
}

impl<T: TypedTool> Tool for Typed<T> {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn validate(&self, args: &Value) -> Vec<Violation> {
        match serde_json::from_value::<T::Params>(args.clone()) {
            Ok(p) => self.inner.validate(&p),
            Err(e) => vec![Violation::new("", error_chain(&e))],
        }
    }

    fn changes(&self, args: &Value) -> Changes {
        self.inner
            .changes(args)
            .unwrap_or_else(|| default_changes(&self.spec))
    }

    fn call<'a>(&'a self, ctx: &'a ToolContext, args: Value) -> BoxFuture<'a, Envelope> {
        Box::pin(async move {
            let params = match parse_params::<T::Params>(args) {
                Ok(p) => p,
                Err(env) => return *env,
            };
            match self.inner.call(ctx, params).await {
                Ok(reply) => reply.into_envelope(),
                Err(err) => err.into_envelope(),
            }
        })
    }
}

/// A tool made of a plain async function and a given spec. The function receives the validated arguments as JSON.
pub struct FnTool<F, Fut> {
    spec: ToolSpec,
    f: F,
    _fut: PhantomData<fn() -> Fut>,
}

impl<F, Fut> fmt::Debug for FnTool<F, Fut> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FnTool")
            .field("name", &self.spec.name)
            .finish_non_exhaustive()
    }
}

impl<F, Fut> FnTool<F, Fut>
where
    F: Fn(ToolContext, Value) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = ToolResult<Value>> + Send + 'static,
{
    /// A tool with `spec` that runs `f`.
    pub fn new(spec: ToolSpec, f: F) -> FnTool<F, Fut> {
        FnTool {
            spec,
            f,
            _fut: PhantomData,
        }
    }
}

impl<F, Fut> Tool for FnTool<F, Fut>
where
    F: Fn(ToolContext, Value) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = ToolResult<Value>> + Send + 'static,
{
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn call<'a>(&'a self, ctx: &'a ToolContext, args: Value) -> BoxFuture<'a, Envelope> {
        let fut = (self.f)(ctx.clone(), args);
        Box::pin(async move {
            match fut.await {
                Ok(reply) => reply.into_envelope(),
                Err(err) => err.into_envelope(),
            }
        })
    }
}
