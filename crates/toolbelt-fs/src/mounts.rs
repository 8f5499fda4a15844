//! Which filesystems the workspace roots live on: [`on_local_filesystems`] says
//! whether every root, its ancestors and everything mounted beneath it are on local
//! filesystems (ext4, xfs, btrfs, tmpfs, overlay...), where a small file operation
//! cannot hang the way one on NFS, SMB, FUSE or 9p can when its server goes away.
//! Callers run small operations inline only where this holds, and hand them to a
//! thread otherwise.
//!
//! The answer follows the mount table: `/proc/self/mountinfo` is read once and
//! read again only when the kernel reports a change on it (a `poll` with no wait,
//! one system call per question).

use std::collections::HashMap;
use std::fs::File;
use std::io::{Read as _, Seek as _, SeekFrom};
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use toolbelt_core::sync::lock;

use rustix::event::{PollFd, PollFlags, poll};

/// Filesystems whose operations complete without a remote server: block devices
/// and memory. Anything else (nfs, cifs, smb3, fuse.*, 9p, virtiofs, ceph, autofs,
/// and what this list does not know) counts as one that may hang.
const LOCAL_FILESYSTEMS: &[&str] = &[
    "bcachefs", "btrfs", "erofs", "exfat", "ext2", "ext3", "ext4", "f2fs", "hfsplus", "iso9660",
    "jfs", "nilfs2", "ntfs3", "overlay", "ramfs", "reiserfs", "squashfs", "tmpfs", "vfat", "xfs",
    "zfs",
];

/// Root sets whose verdict is kept at most; past it, all are forgotten.
const MAX_KEPT_VERDICTS: usize = 64;

/// One line of the mount table.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Mount {
    point: PathBuf,
    fstype: String,
}

struct Table {
    file: File,
    mounts: Vec<Mount>,
    verdicts: HashMap<Vec<PathBuf>, bool>,
}

static TABLE: Mutex<Option<Table>> = Mutex::new(None);

/// True when every one of `roots` (canonical absolute paths), the directories above
/// it and everything mounted beneath it lie on local filesystems. False when the
/// mount table cannot be read.
pub fn on_local_filesystems(roots: &[PathBuf]) -> bool {
    let mut guard = lock(&TABLE);
    if let Some(table) = guard.as_mut()
        && changed(&table.file)
    {
        match read_table(&mut table.file) {
            Some(mounts) => {
                table.mounts = mounts;
                table.verdicts.clear();
            }
            None => *guard = None,
        }
    }
    if guard.is_none() {
        let Some(mut file) = File::open("/proc/self/mountinfo").ok() else {
            return false;
        };
        let Some(mounts) = read_table(&mut file) else {
            return false;
        };
        *guard = Some(Table {
            file,
            mounts,
            verdicts: HashMap::new(),
        });
    }
    let Some(table) = guard.as_mut() else {
        return false;
    };
    if let Some(&verdict) = table.verdicts.get(roots) {
        return verdict;
    }
    let verdict = roots.iter().all(|r| local_beneath(&table.mounts, r));
    if table.verdicts.len() >= MAX_KEPT_VERDICTS {
        table.verdicts.clear();
    }
    table.verdicts.insert(roots.to_vec(), verdict);
    verdict
}

/// Whether the kernel reports a change of the mount table since the last look.
fn changed(file: &File) -> bool {
    let mut fds = [PollFd::new(file, PollFlags::PRI)];
    let zero = rustix::time::Timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    match poll(&mut fds, Some(&zero)) {
        Ok(0) => false,
        // A change, or an error: read the table again either way.
        Ok(_) | Err(_) => true,
    }
}

fn read_table(file: &mut File) -> Option<Vec<Mount>> {
    file.seek(SeekFrom::Start(0)).ok()?;
    let mut text = String::new();
    file.read_to_string(&mut text).ok()?;
    Some(parse(&text))
}

/// The mount points and filesystem types of a `mountinfo` text.
fn parse(text: &str) -> Vec<Mount> {
    text.lines()
        .filter_map(|line| {
            let (before, after) = line.split_once(" - ")?;
            let point = before.split(' ').nth(4)?;
            let fstype = after.split(' ').next()?;
            Some(Mount {
                point: PathBuf::from(unescape(point)),
                fstype: fstype.to_string(),
            })
        })
        .collect()
}

/// Undoes the octal escapes of `mountinfo` (`\040` for a space).
fn unescape(field: &str) -> String {
    let bytes = field.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let digits = bytes.get(i + 1..i + 4);
        if bytes[i] == b'\\'
            && let Some(d) = digits
            && d.iter().all(|b| (b'0'..=b'7').contains(b))
        {
            out.push((d[0] - b'0') * 64 + (d[1] - b'0') * 8 + (d[2] - b'0'));
            i += 4;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn is_local(fstype: &str) -> bool {
    LOCAL_FILESYSTEMS.contains(&fstype)
}

/// Whether every mount `root`'s path crosses (its own and those of its ancestors,
/// which a listing's ignore rules are looked up in) and everything mounted beneath it
/// are local filesystems. Of several mounts on one point, the last listed is the one
/// seen.
fn local_beneath(mounts: &[Mount], root: &Path) -> bool {
    let mut seen: HashMap<&Path, &str> = HashMap::new();
    for m in mounts {
        seen.insert(&m.point, &m.fstype);
    }
    let mut held = false;
    for (point, fstype) in seen {
        let above = root.starts_with(point);
        held |= above;
        if (above || point.starts_with(root)) && !is_local(fstype) {
            return false;
        }
    }
    held
}

#[cfg(test)]
mod tests {
    use super::*;

    const TABLE: &str = "\
22 1 259:1 / / rw,relatime shared:1 - ext4 /dev/vda1 rw
23 22 0:21 / /proc rw,nosuid shared:12 - proc proc rw
30 22 0:26 / /tmp rw shared:5 - tmpfs tmpfs rw
40 22 0:40 / /work/shared\\040dir rw shared:9 - nfs4 server:/export rw
41 22 0:41 / /home/me/project/vendor rw shared:10 - fuse.sshfs me@host: rw
42 22 0:42 / /home/me/other/cache rw shared:11 - tmpfs tmpfs rw
";

    fn verdict(root: &str) -> bool {
        local_beneath(&parse(TABLE), Path::new(root))
    }

    #[test]
    fn local_roots_and_their_local_submounts_pass() {
        assert!(verdict("/home/me/other"));
        assert!(verdict("/tmp/x"));
        assert!(verdict("/home/me/projects"));
    }

    #[test]
    fn a_root_on_a_network_filesystem_fails() {
        assert!(!verdict("/work/shared dir"));
        assert!(!verdict("/work/shared dir/sub"));
        assert!(verdict("/work/shared"));
    }

    #[test]
    fn a_network_mount_beneath_a_root_fails() {
        assert!(!verdict("/home/me/project"));
        assert!(!verdict("/home/me"));
        assert!(!verdict("/"));
    }

    #[test]
    fn a_local_mount_inside_a_network_one_fails() {
        // The listing looks for ignore files in the ancestors, on the network mount.
        let table =
            format!("{TABLE}51 40 0:51 / /work/shared\\040dir/scratch rw - tmpfs tmpfs rw\n");
        assert!(!local_beneath(
            &parse(&table),
            Path::new("/work/shared dir/scratch/x")
        ));
    }

    #[test]
    fn the_last_mount_on_a_point_is_the_one_seen() {
        let table = format!("{TABLE}50 30 0:50 / /tmp rw shared:20 - 9p host rw\n");
        assert!(!local_beneath(&parse(&table), Path::new("/tmp/x")));
    }

    #[test]
    fn escapes_are_undone() {
        assert_eq!(unescape("/a\\040b\\011c"), "/a b\tc");
        assert_eq!(unescape("/plain\\"), "/plain\\");
    }

    #[test]
    fn this_machine_answers() {
        // Whatever the machine, the question is answered from its mount table and
        // answered the same way twice.
        let roots = vec![std::env::temp_dir()];
        assert_eq!(on_local_filesystems(&roots), on_local_filesystems(&roots));
    }
}
