// A guard process between the harness and each child it starts, so that nothing the child
// starts outlives it: not a grandchild in its own session (setsid) or process group, not
// when the harness is SIGKILLed. A process group cannot promise that; the guard is a child
// subreaper (PR_SET_CHILD_SUBREAPER), so every orphan below it becomes its own child, and it
// kills and reaps every descendant when the child ends, when it is told to stop, and when
// the harness dies (PR_SET_PDEATHSIG). It then ends as the child ended (exit code or
// signal), so the harness reads the guard's status as the child's.
#pragma once

#include <sys/types.h>

namespace attngate {

/// Call first thing in a child just forked from the harness (`harness`: the harness's pid).
/// The process becomes the guard, in its own process group, and forks the real child; the
/// call returns only in that child (which then does its work or execs), killed when the
/// guard dies. Signal mask and dispositions are the harness's in the child, as after fork.
void become_guard(pid_t harness);

/// Ends a guarded child and everything below it: SIGTERM to the guard (it passes it on to
/// the child, then SIGKILLs every descendant after a moment), and SIGKILL to the guard's
/// group should the guard not end within a few seconds. Does not reap the guard.
void end_guarded(pid_t guard);

/// Removes directory `path` and everything in it (symbolic links are removed, not followed)
/// with system calls only: safe in a signal handler, where std::filesystem is not.
void remove_tree_in_handler(const char *path);

}  // namespace attngate
