package runtime_test

import (
	"context"
	"fmt"
	"io"
	"os"

	"github.com/sandgate/sandgate/runtime"
)

func ExampleSandbox_Exec() {
	dir, _ := os.MkdirTemp("", "sandbox")
	defer os.RemoveAll(dir)
	sb, err := runtime.New(&runtime.Config{Dir: dir, Env: map[string]string{"GREETING": "hello"}})
	if err != nil {
		panic(err)
	}
	defer sb.Close(context.Background())
	res, err := sb.Exec(context.Background(), runtime.ExecOptions{Command: `printf '%s\n' "$GREETING"; exit 3`})
	if err != nil {
		panic(err)
	}
	fmt.Printf("%q %d\n", res.Stdout, res.ExitCode)
	// Output: "hello\n" 3
}

func ExampleProcess_Subscribe() {
	dir, _ := os.MkdirTemp("", "sandbox")
	defer os.RemoveAll(dir)
	sb, err := runtime.New(&runtime.Config{Dir: dir})
	if err != nil {
		panic(err)
	}
	defer sb.Close(context.Background())
	p, err := sb.Start(context.Background(), runtime.StartOptions{Command: "echo out; exit 2"})
	if err != nil {
		panic(err)
	}
	if _, err := p.Wait(context.Background()); err != nil {
		panic(err)
	}
	sub := p.Subscribe(0)
	defer sub.Close()
	for {
		ev, err := sub.Next(context.Background())
		if err == io.EOF {
			break
		}
		switch ev.Kind {
		case runtime.EventOutput:
			fmt.Printf("%s %d %q\n", ev.Stream, ev.Offset, ev.Data)
		case runtime.EventExit:
			fmt.Println("exit", ev.Exit.Code)
		}
	}
	// Output:
	// stdout 0 "out\n"
	// exit 2
}

func ExampleParseSignal() {
	for _, s := range []string{"SIGINT", "term", "9"} {
		sig, _ := runtime.ParseSignal(s)
		fmt.Println(runtime.SignalName(sig), int(sig))
	}
	// Output:
	// SIGINT 2
	// SIGTERM 15
	// SIGKILL 9
}
