package badgerutil

import "testing"

// TestLifecycle: Close waits for the call in progress; a call entering
// while Close waits is refused, and so is a second Close.
func TestLifecycle(t *testing.T) {
	var l Lifecycle
	if !l.Enter() {
		t.Fatal("Enter on the zero Lifecycle refused")
	}
	closed := make(chan bool)
	go func() { closed <- l.Close() }()
	// Close has begun once a new call is refused; it cannot return while
	// the first call is in progress.
	for l.Enter() {
		l.Exit()
	}
	select {
	case <-closed:
		t.Fatal("Close returned while a call was in progress")
	default:
	}
	l.Exit()
	if ok := <-closed; !ok {
		t.Error("first Close = false, want true")
	}
	if l.Close() {
		t.Error("second Close = true, want false")
	}
	if l.Enter() {
		t.Error("Enter after Close = true, want false")
	}
}
