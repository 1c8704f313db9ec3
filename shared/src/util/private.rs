//! Folders and files only this process's user can change: the node's state folder (its privacy
//! ledger) and its identity folder (its keys). Whoever can write them can roll the ledger back
//! (swap `node.sqlite` for an older copy, which re-spends the budget) or replace the keys.
//!
//! The rules ([`check_state_dir`], [`check_identity_dir`]):
//! - the state folder and its files we use: owned by this process's user, not writable by
//!   group or others;
//! - every folder above the state folder up to `/`: owned by this user or root, and not
//!   writable by others unless sticky (mode 1777 like `/tmp`, where nobody may rename another
//!   user's entry), nor by a group other than this process's own (folders of a Kubernetes
//!   `fsGroup` volume, home folders under user-private groups);
//! - the identity folder and its secret files: owned by this user or root (root can change
//!   anything anyway; container runtimes mount secrets as root's), not writable by group or
//!   others — the folder itself may be a root-owned sticky mount point.
//!
//! Symbolic links are followed to what they name, and the folders above both the path as given
//! and the real path are checked.
//!
//! The process's user is found without unsafe code ([`Me::current`]): the owner and group of an
//! anonymous temporary file it creates are exactly the ones the kernel gives every file this
//! process makes (its effective, or file-system, uid and gid); `/proc/self`, owned by the
//! effective user, is the fallback when no temporary file can be made.

#[cfg(unix)]
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

/// Why a folder or file may be changed by someone else.
#[derive(Debug, thiserror::Error)]
pub enum PrivateError {
    /// Its metadata cannot be read.
    #[error("{path}: cannot check who may change it: {source}")]
    Io {
        /// The path.
        path: String,
        /// The error.
        source: std::io::Error,
    },
    /// Group or others may write it.
    #[error("{what} {path} is writable by group or others (mode {mode:04o}): run `{fix}`")]
    Writable {
        /// What it is (`state folder`, `state file`, `folder above the state folder`, …).
        what: &'static str,
        /// The path.
        path: String,
        /// Its permission bits.
        mode: u32,
        /// The command that fixes it.
        fix: String,
    },
    /// Another user owns it.
    #[error(
        "{what} {path} is owned by uid {owner}, not by this process's user (uid {me}): run the node as its owner, or `chown {me} {path}`"
    )]
    Owner {
        /// What it is.
        what: &'static str,
        /// The path.
        path: String,
        /// Its owner.
        owner: u32,
        /// This process's user.
        me: u32,
    },
}

/// This process's user and group, as the files it creates get them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Me {
    /// User id.
    pub uid: u32,
    /// Group id.
    pub gid: u32,
}

impl Me {
    /// The owner and group of an anonymous temporary file this process creates; the owner of
    /// `/proc/self` (its effective user) when none can be created.
    #[cfg(unix)]
    pub fn current() -> std::io::Result<Self> {
        match tempfile::tempfile().and_then(|f| f.metadata()) {
            Ok(m) => Ok(Self {
                uid: m.uid(),
                gid: m.gid(),
            }),
            Err(_) => {
                let m = std::fs::metadata("/proc/self")?;
                Ok(Self {
                    uid: m.uid(),
                    gid: m.gid(),
                })
            }
        }
    }
}

/// The role of a path, which sets its rule.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Role {
    /// The state folder or a file in it: ours alone.
    State(&'static str),
    /// A folder above the state folder.
    Above,
    /// The identity folder or a secret file in it.
    Secret(&'static str),
}

#[cfg(unix)]
fn check(path: &Path, role: Role, me: Me) -> Result<(), PrivateError> {
    let m = std::fs::metadata(path).map_err(|source| PrivateError::Io {
        path: path.display().to_string(),
        source,
    })?;
    let mode = m.mode() & 0o7777;
    let (what, root_ok) = match role {
        Role::State(what) => (what, false),
        Role::Above => ("folder above the state folder", true),
        Role::Secret(what) => (what, true),
    };
    let owner = m.uid();
    if owner != me.uid && !(root_ok && owner == 0) {
        return Err(PrivateError::Owner {
            what,
            path: path.display().to_string(),
            owner,
            me: me.uid,
        });
    }
    let sticky = mode & 0o1000 != 0;
    let allowed = match role {
        Role::State(_) => mode & 0o022 == 0,
        Role::Above => sticky || (mode & 0o002 == 0 && (mode & 0o020 == 0 || m.gid() == me.gid)),
        Role::Secret(_) => mode & 0o022 == 0 || (m.is_dir() && sticky && owner == 0),
    };
    if allowed {
        return Ok(());
    }
    let shown = path.display().to_string();
    let fix = match role {
        Role::State(_) if m.is_dir() => format!("chmod 700 {shown}"),
        Role::State(_) => format!("chmod 600 {shown}"),
        Role::Above | Role::Secret(_) => format!("chmod go-w {shown}"),
    };
    Err(PrivateError::Writable {
        what,
        path: shown,
        mode,
        fix,
    })
}

/// The folders above `dir` (as given, made absolute, and as its real path when it exists),
/// nearest first, those that exist only.
fn folders_above(dir: &Path) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = Vec::new();
    let given = std::path::absolute(dir).unwrap_or_else(|_| dir.to_path_buf());
    let real = given.canonicalize().ok();
    for path in std::iter::once(&given).chain(real.as_ref()) {
        for a in path.ancestors().skip(1) {
            if a.exists() && !out.iter().any(|o| o == a) {
                out.push(a.to_path_buf());
            }
        }
    }
    out
}

/// Checks the state folder `dir`, the files `files` in it that exist, and every folder above it
/// (see the module documentation). A state folder that does not exist yet passes when the
/// folders above it do (it is then created 0700 by its user).
#[cfg(unix)]
pub fn check_state_dir(dir: &Path, files: &[&str]) -> Result<(), PrivateError> {
    let me = Me::current().map_err(|source| PrivateError::Io {
        path: dir.display().to_string(),
        source,
    })?;
    for above in folders_above(dir) {
        check(&above, Role::Above, me)?;
    }
    if !dir.exists() {
        return Ok(());
    }
    check(dir, Role::State("state folder"), me)?;
    for name in files {
        let path = dir.join(name);
        if path.exists() {
            check(&path, Role::State("state file"), me)?;
        }
    }
    Ok(())
}

/// Checks the identity folder `dir` and its secret files `files` that exist (see the module
/// documentation).
#[cfg(unix)]
pub fn check_identity_dir(dir: &Path, files: &[&str]) -> Result<(), PrivateError> {
    let me = Me::current().map_err(|source| PrivateError::Io {
        path: dir.display().to_string(),
        source,
    })?;
    check(dir, Role::Secret("identity folder"), me)?;
    for name in files {
        let path = dir.join(name);
        if path.exists() {
            check(&path, Role::Secret("secret file"), me)?;
        }
    }
    Ok(())
}

/// Without Unix permissions there is nothing to check.
#[cfg(not(unix))]
pub fn check_state_dir(_dir: &Path, _files: &[&str]) -> Result<(), PrivateError> {
    Ok(())
}

/// Without Unix permissions there is nothing to check.
#[cfg(not(unix))]
pub fn check_identity_dir(_dir: &Path, _files: &[&str]) -> Result<(), PrivateError> {
    Ok(())
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn chmod(p: &Path, mode: u32) {
        std::fs::set_permissions(p, std::fs::Permissions::from_mode(mode)).expect("chmod");
    }

    #[test]
    fn the_process_user_owns_what_it_creates() {
        let me = Me::current().expect("me");
        let dir = tempfile::tempdir().expect("tempdir");
        assert_eq!(std::fs::metadata(dir.path()).expect("meta").uid(), me.uid);
    }

    #[test]
    fn a_private_state_folder_passes_and_open_ones_are_refused_with_the_fix() {
        let top = tempfile::tempdir().expect("tempdir");
        let state = top.path().join("state");
        check_state_dir(&state, &["node.sqlite"]).expect("not there yet");
        crate::util::files::create_private_dir(&state).expect("mkdir");
        std::fs::write(state.join("node.sqlite"), b"").expect("write");
        chmod(&state.join("node.sqlite"), 0o600);
        check_state_dir(&state, &["node.sqlite", "absent"]).expect("private");
        chmod(&state, 0o777);
        let e = check_state_dir(&state, &[])
            .expect_err("open folder")
            .to_string();
        assert!(e.contains("mode 0777") && e.contains("chmod 700"), "{e}");
        chmod(&state, 0o700);
        chmod(&state.join("node.sqlite"), 0o660);
        let e = check_state_dir(&state, &["node.sqlite"]).expect_err("open file");
        assert!(e.to_string().contains("chmod 600"), "{e}");
        chmod(&state.join("node.sqlite"), 0o600);
        // Above: world-writable refused, sticky allowed; the state folder itself never sticky.
        chmod(top.path(), 0o777);
        let e = check_state_dir(&state, &[])
            .expect_err("open parent")
            .to_string();
        assert!(
            e.contains("folder above") && e.contains("chmod go-w"),
            "{e}"
        );
        chmod(top.path(), 0o1777);
        check_state_dir(&state, &[]).expect("sticky parent");
        chmod(&state, 0o1777);
        assert!(check_state_dir(&state, &[]).is_err());
        chmod(&state, 0o700);
        chmod(top.path(), 0o700);
    }

    #[test]
    fn identity_folders_and_keys_must_not_be_writable_by_others() {
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::write(dir.path().join("key.pem"), b"k").expect("write");
        chmod(&dir.path().join("key.pem"), 0o640);
        check_identity_dir(dir.path(), &["key.pem", "signing.key"]).expect("private");
        chmod(&dir.path().join("key.pem"), 0o666);
        assert!(check_identity_dir(dir.path(), &["key.pem"]).is_err());
    }
}
