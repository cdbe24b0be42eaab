package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestFresh: devcluster empties its own earlier working directory, makes
// a new one, and refuses to empty a directory it did not make.
func TestFresh(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "cluster")
	if err := fresh(dir); err != nil {
		t.Fatalf("a new directory: %v", err)
	}
	left := filepath.Join(dir, "member1", "pinbot.log")
	if err := os.MkdirAll(filepath.Dir(left), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(left, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := fresh(dir); err != nil {
		t.Fatalf("an earlier run's directory: %v", err)
	}
	if _, err := os.Stat(left); !os.IsNotExist(err) {
		t.Fatalf("an earlier run's file survived: %v", err)
	}

	other := filepath.Join(root, "data")
	keep := filepath.Join(other, "pinbot.key")
	if err := os.MkdirAll(other, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keep, []byte("secret"), 0o600); err != nil {
		t.Fatal(err)
	}
	err := fresh(other)
	if err == nil || !strings.Contains(err.Error(), "not an earlier run's") {
		t.Fatalf("a directory devcluster did not make: %v, want a refusal", err)
	}
	if _, err := os.Stat(keep); err != nil {
		t.Fatalf("the refused directory's file: %v", err)
	}
}
