package examples

import (
	"bytes"
	"strings"
)

// ExpectedError returns the message an invalid example must be refused with: the text after
// "# expect-error:" on its first line. The end-to-end tests read the same line.
func ExpectedError(manifest []byte) (string, bool) {
	first, _, _ := bytes.Cut(manifest, []byte("\n"))
	msg, ok := strings.CutPrefix(string(first), "# expect-error:")
	msg = strings.TrimSpace(msg)
	return msg, ok && msg != ""
}
