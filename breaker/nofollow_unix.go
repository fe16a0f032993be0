//go:build unix

package breaker

import "syscall"

// noFollow refuses a symlink at the state's name.
const noFollow = syscall.O_NOFOLLOW
