package runtime

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

func ExampleOpenWorkspace() {
	dir, _ := os.MkdirTemp("", "ws-example-")
	defer os.RemoveAll(dir)
	w, err := OpenWorkspace(dir)
	if err != nil {
		panic(err)
	}
	defer w.Close()

	mode := fs.FileMode(0o600)
	_ = w.WriteFile("notes/todo.txt", strings.NewReader("ship it\n"), &mode)
	f, _, _ := w.Open(filepath.Join(w.Dir(), "notes/todo.txt")) // absolute paths inside work too
	b, _ := io.ReadAll(f)
	f.Close()
	fmt.Printf("%q\n", b)

	ents, _ := w.ReadDir("notes")
	fmt.Println(ents[0].Name, ents[0].Type, ents[0].Mode)

	_, err = w.ReadDir("../..")
	fmt.Println(errors.Is(err, ErrEscapes))
	// Output:
	// "ship it\n"
	// todo.txt file -rw-------
	// true
}
