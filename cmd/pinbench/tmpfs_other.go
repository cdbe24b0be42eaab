//go:build !linux

package main

import "errors"

// mountScratchTmpfs is Linux-only: elsewhere the disk-full run injects a
// store fault instead.
func mountScratchTmpfs() (string, error) {
	return "", errors.New("tmpfs mounts need Linux")
}

func unmountScratchTmpfs(string) error { return nil }
