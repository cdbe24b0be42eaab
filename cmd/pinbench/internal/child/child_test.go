package child

import (
	"fmt"
	"testing"
)

func TestTailKeepsEnd(t *testing.T) {
	tl := NewTail(10)
	for i := range 5 {
		fmt.Fprintf(tl, "line%d\n", i)
	}
	if got, want := tl.String(), "ne3\nline4\n"; got != want {
		t.Fatalf("String() = %q want %q", got, want)
	}
}

func TestCaptureKeepsHeadAndTail(t *testing.T) {
	c := NewCapture(6, 6)
	fmt.Fprint(c, "fatal: boom\n")
	if got := c.String(); got != "fatal: boom\n" {
		t.Fatalf("short output: %q", got)
	}
	for i := range 10 {
		fmt.Fprintf(c, "frame %d\n", i)
	}
	if c.Head() != "fatal:" {
		t.Fatalf("Head() = %q want %q", c.Head(), "fatal:")
	}
	if got, want := c.String(), "fatal:\n[...]\name 9\n"; got != want {
		t.Fatalf("String() = %q want %q", got, want)
	}
}
