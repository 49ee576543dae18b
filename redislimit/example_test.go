package redislimit_test

import (
	"log"

	"github.com/redis/go-redis/v9"

	rail0 "github.com/rail0/rail0-go"
	"github.com/rail0/rail0-go/redislimit"
)

// Every process that builds its client this way, against the same Redis
// server and key prefix, paces itself within the gateway's published limits
// together with the others, and waits out a cooldown that any of them hit.
func ExampleNew() {
	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:6379"})
	defer rdb.Close()

	client, err := rail0.NewClient("https://api.rail0.xyz",
		rail0.WithPacing(rail0.PublishedLimits()),
		rail0.WithRetryOn429(true),
		rail0.WithLimiter(redislimit.New(rdb, redislimit.WithKeyPrefix("shop-eu:rl:"))),
	)
	if err != nil {
		log.Fatal(err)
	}
	_ = client // use client.Payments, client.Chains, ...
}
