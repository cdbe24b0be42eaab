package main

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
)

// copyDir copies the directory src, its regular files and subdirectories,
// into dst, which must exist and be empty. Holes in sparse files stay
// holes where the system says where they are (see dataRegion): Badger
// sizes the files it memory-maps to their capacity (a value-log file is
// twice its 64 MiB limit while open, and a killed process leaves it so)
// and writes little of them.
func copyDir(dst, src string) error {
	return filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, path)
		if err != nil {
			return err
		}
		target := filepath.Join(dst, rel)
		switch {
		case rel == ".":
			return nil
		case d.IsDir():
			return os.Mkdir(target, 0o755)
		case d.Type().IsRegular():
			return copyFile(target, path)
		}
		return fmt.Errorf("copying %s: not a regular file or a directory (%v)", path, d.Type())
	})
}

// copyFile copies the regular file src to dst, which must not exist, with
// the same size and permissions, writing only src's data regions.
func copyFile(dst, src string) (err error) {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	info, err := in.Stat()
	if err != nil {
		return err
	}
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, info.Mode().Perm())
	if err != nil {
		return err
	}
	defer func() {
		if cerr := out.Close(); cerr != nil && err == nil {
			err = fmt.Errorf("closing the copy %s: %w", dst, cerr)
		}
	}()
	size := info.Size()
	for off := int64(0); off < size; {
		start, end, err := dataRegion(in, off, size)
		if errors.Is(err, errNoMoreData) {
			break
		}
		if err != nil {
			return fmt.Errorf("copying %s: looking for data from offset %d: %w", src, off, err)
		}
		if _, err := out.Seek(start, io.SeekStart); err != nil {
			return fmt.Errorf("copying %s to %s: %w", src, dst, err)
		}
		if _, err := io.Copy(out, io.NewSectionReader(in, start, end-start)); err != nil {
			return fmt.Errorf("copying %s to %s: %w", src, dst, err)
		}
		off = end
	}
	// The size, whatever hole ends the file.
	if err := out.Truncate(size); err != nil {
		return fmt.Errorf("copying %s: sizing the copy %s: %w", src, dst, err)
	}
	return nil
}

// errNoMoreData is returned by dataRegion when only a hole is left.
var errNoMoreData = errors.New("no data after the offset")
