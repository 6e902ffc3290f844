// Command mogstored is the gomogile storage node; see package mogstored.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/gomogile/gomogile/internal/buildinfo"
	"github.com/gomogile/gomogile/mogstored"
)

func main() {
	if buildinfo.VersionRequested(os.Args[1:]) {
		fmt.Println(buildinfo.Read().String("mogstored"))
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
	go func() {
		<-sigs
		cancel() // first signal: close gracefully
		<-sigs
		fmt.Fprintln(os.Stderr, "mogstored: second signal, exiting without waiting")
		os.Exit(1)
	}()
	if err := mogstored.NewMain().Run(ctx, os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
