//! A workspace's checkpoints: its roots, content store, records and stat
//! indexes, shared by taking checkpoints, rewinding and pruning.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use toolbelt_core::checkpoint::absolute_path;
use toolbelt_store::StoreHandle;

use crate::Settings;
use crate::blobs::Blobs;
use crate::index::{Index, index_path};
use crate::observe::{FILE, Stat};

/// Checkpoints of one workspace: its roots, its content store and its records.
/// Cheap to clone.
#[derive(Clone)]
pub struct Checkpoints {
    pub(crate) inner: Arc<Inner>,
}

pub(crate) struct Inner {
    pub settings: Settings,
    pub store: StoreHandle,
    /// The workspace's name in the store (its first root).
    pub workspace: String,
    pub roots: Vec<PathBuf>,
    /// `<state>/checkpoints`.
    pub dir: PathBuf,
    /// What a walk leaves out: the state directory, when it is in the workspace
    /// (toolbelt's own files, the checkpoints' content among them).
    pub skip: Vec<PathBuf>,
    pub blobs: Blobs,
    /// The stat index of each root, loaded on first use.
    /// The watch of each root's directories, once this process has walked it
    /// twice (a process that runs one command does not pay for it).
    pub watches: Mutex<HashMap<PathBuf, crate::watch::Watch>>,
    /// The walks after a command this process has made.
    pub walks_after: std::sync::atomic::AtomicU64,
    pub indexes: Mutex<HashMap<PathBuf, Arc<Mutex<Index>>>>,
}

impl std::fmt::Debug for Checkpoints {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Checkpoints")
            .field("workspace", &self.inner.workspace)
            .field("dir", &self.inner.dir)
            .finish_non_exhaustive()
    }
}

impl Checkpoints {
    /// The checkpoints of the workspace `roots` (the first one names it), kept in
    /// `<state_dir>/checkpoints` and `store`.
    pub fn new(
        settings: Settings,
        store: StoreHandle,
        state_dir: &Path,
        roots: Vec<PathBuf>,
    ) -> Checkpoints {
        let dir = state_dir.join("checkpoints");
        let skip = vec![absolute_path(
            &std::env::current_dir().unwrap_or_default(),
            state_dir,
        )];
        // `/w/.` and `/w/` are the workspace `/w`.
        let roots: Vec<PathBuf> = roots
            .iter()
            .map(|r| absolute_path(Path::new("/"), r))
            .collect();
        let workspace = roots
            .first()
            .map(|r| r.display().to_string())
            .unwrap_or_default();
        Checkpoints {
            inner: Arc::new(Inner {
                settings,
                store,
                workspace,
                roots,
                blobs: Blobs::new(dir.join("objects")),
                dir,
                skip,
                watches: Mutex::default(),
                walks_after: std::sync::atomic::AtomicU64::new(0),
                indexes: Mutex::default(),
            }),
        }
    }

    /// The settings.
    pub fn settings(&self) -> &Settings {
        &self.inner.settings
    }

    /// The workspace's name in the store.
    pub fn workspace(&self) -> &str {
        &self.inner.workspace
    }

    /// Where the content and indexes are kept.
    pub fn dir(&self) -> &Path {
        &self.inner.dir
    }

    /// The roots.
    pub fn roots(&self) -> &[PathBuf] {
        &self.inner.roots
    }

    /// The store the records are in (opened on first use).
    ///
    /// # Errors
    /// It cannot be opened.
    pub async fn store(&self) -> Result<&toolbelt_store::Store, toolbelt_store::StoreError> {
        self.inner.store.store().await
    }

    pub(crate) fn blobs(&self) -> &Blobs {
        &self.inner.blobs
    }
}

impl Inner {
    /// The root `abs` is under and its path there (`/`-separated), when it is in
    /// the workspace and not under `.git`.
    pub(crate) fn locate(&self, abs: &Path) -> Option<(PathBuf, String)> {
        let root = self
            .roots
            .iter()
            .filter(|r| abs.starts_with(r))
            .max_by_key(|r| r.as_os_str().len())?;
        let rel = crate::index::relative(root, abs)?;
        if rel.split('/').any(|part| part == ".git") {
            return None;
        }
        Some((root.clone(), rel))
    }

    /// The path a record keeps for `rel` under `root`: relative to the first root,
    /// else absolute.
    pub(crate) fn record_path(&self, root: &Path, rel: &str) -> String {
        if self.roots.first().is_some_and(|r| r == root) {
            rel.to_string()
        } else {
            root.join(rel).display().to_string()
        }
    }

    /// The absolute path of a record's path.
    pub(crate) fn absolute(&self, recorded: &str) -> PathBuf {
        let p = Path::new(recorded);
        if p.is_absolute() {
            p.to_path_buf()
        } else {
            self.roots
                .first()
                .map_or_else(|| p.to_path_buf(), |r| r.join(p))
        }
    }

    pub(crate) fn index(&self, root: &Path) -> Arc<Mutex<Index>> {
        let mut indexes = toolbelt_core::sync::lock(&self.indexes);
        Arc::clone(
            indexes
                .entry(root.to_path_buf())
                .or_insert_with(|| Arc::new(Mutex::new(Index::load(&index_path(&self.dir, root))))),
        )
    }

    /// Forgets `rel` in `root`'s index, if it is loaded: its next walk reads it again.
    pub(crate) fn forget(&self, root: &Path, rel: &str) {
        let loaded = toolbelt_core::sync::lock(&self.indexes).get(root).cloned();
        if let Some(index) = loaded {
            let mut index = toolbelt_core::sync::lock(&index);
            index.entries.remove(rel);
            index.dirty.insert(rel.to_string());
        }
    }

    /// Every hash the indexes on disk and in memory refer to.
    pub(crate) fn index_hashes(&self) -> std::collections::HashSet<String> {
        let mut out = std::collections::HashSet::new();
        for root in &self.roots {
            let index = self.index(root);
            let index = toolbelt_core::sync::lock(&index);
            out.extend(index.hashes().map(str::to_string));
            let on_disk = Index::load(&index_path(&self.dir, root));
            out.extend(on_disk.hashes().map(str::to_string));
        }
        out
    }

    pub(crate) fn capturable(&self, st: &Stat) -> bool {
        st.kind == FILE
            && crate::observe::not_capturable(st, self.settings.max_file_bytes).is_none()
    }
}
