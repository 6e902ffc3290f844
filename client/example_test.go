package client_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"strings"
	"time"

	"github.com/gomogile/gomogile/client"
)

// Storing and reading back a file. (Not run: it needs a tracker.)
func Example() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	c, err := client.New([]string{"tracker1:7001", "tracker2:7001"}, &client.Options{Domain: "photos"})
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()

	data := "hello"
	if _, err := c.StoreFile(ctx, "", "greeting", "", strings.NewReader(data), int64(len(data))); err != nil {
		log.Fatal(err)
	}
	rc, err := c.FetchFile(ctx, "", "greeting")
	if errors.Is(err, client.ErrUnknownKey) {
		log.Fatal("gone already")
	}
	if err != nil {
		log.Fatal(err)
	}
	defer rc.Close()
	b, err := io.ReadAll(rc)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(string(b))
}

// Any tracker command, by name, with its Query.pm arguments.
func ExampleClient_Do() {
	c, err := client.New([]string{"127.0.0.1:7001"}, nil)
	if err != nil {
		log.Fatal(err)
	}
	reply, err := c.Do(context.Background(), "file_info", map[string][]string{"domain": {"photos"}, "key": {"greeting"}})
	var te *client.Error
	if errors.As(err, &te) {
		log.Fatalf("tracker says %s (%s)", te.Code, te.Message)
	}
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(reply.Get("fid"), reply.Get("length"))
}
