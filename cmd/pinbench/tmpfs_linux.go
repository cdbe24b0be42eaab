package main

import (
	"errors"
	"fmt"
	"os"
	"syscall"
)

// mountScratchTmpfs mounts a tmpfs of tmpfsSize bytes on a new temporary
// directory and returns it. It needs root (or CAP_SYS_ADMIN).
func mountScratchTmpfs() (string, error) {
	if os.Geteuid() != 0 {
		return "", errors.New("not running as root, so no tmpfs can be mounted")
	}
	dir, err := os.MkdirTemp("", "pinbench-tmpfs-")
	if err != nil {
		return "", err
	}
	if err := syscall.Mount("tmpfs", dir, "tmpfs", syscall.MS_NOSUID|syscall.MS_NODEV,
		fmt.Sprintf("size=%d,mode=0700", tmpfsSize)); err != nil {
		os.Remove(dir)
		return "", fmt.Errorf("mount -t tmpfs -o size=%dm on %s: %w", tmpfsSize>>20, dir, err)
	}
	return dir, nil
}

// unmountScratchTmpfs unmounts the tmpfs on dir (lazily if it is still
// busy) and removes dir.
func unmountScratchTmpfs(dir string) error {
	if err := syscall.Unmount(dir, 0); err != nil {
		if err2 := syscall.Unmount(dir, syscall.MNT_DETACH); err2 != nil {
			return fmt.Errorf("umount %s: %w", dir, errors.Join(err, err2))
		}
	}
	return os.Remove(dir)
}
