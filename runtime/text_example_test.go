package runtime_test

import (
	"fmt"

	"github.com/sandgate/sandgate/runtime"
)

// A TextEncoder turns output read in chunks, cut anywhere, into valid UTF-8 and counts
// its UTF-16 units (what a JavaScript client's String.length says).
func ExampleTextEncoder() {
	var e runtime.TextEncoder
	var text []byte
	var units int64
	// "é 😀", cut inside both characters, then a stray byte and an unfinished "€".
	for _, chunk := range []string{"\xc3", "\xa9 \xf0\x9f", "\x98\x80 \xff", "\xe2\x82"} {
		var n int64
		text, n = e.Encode(text, []byte(chunk))
		units += n
	}
	fmt.Printf("%+q %d units, %d bytes held\n", text, units, e.Held())
	text, n := e.Flush(text) // at the exit
	fmt.Printf("%+q %d units\n", text, units+n)
	// Output:
	// "\u00e9 \U0001f600 \ufffd" 6 units, 2 bytes held
	// "\u00e9 \U0001f600 \ufffd\ufffd\ufffd" 8 units
}
