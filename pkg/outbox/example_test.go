package outbox_test

import (
	"context"
	"fmt"

	"go.mongodb.org/mongo-driver/v2/bson"

	"quarters.dev/pkg/extkafka"
	"quarters.dev/pkg/extmongo"
	"quarters.dev/pkg/outbox"
)

// A repository renames an org from version 3 to version 4 and records the
// org.updated event in the same single-document update; the relay publishes
// it afterwards.
func Example() {
	ctx := context.Background()
	client, db, err := extmongo.Connect(ctx, "mongodb://127.0.0.1:27017/?maxPoolSize=1", "auth")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer client.Disconnect(ctx)
	writer := extkafka.NewWriter([]string{"127.0.0.1:9092"})
	defer writer.Close()

	orgs := db.Collection("orgs")
	relay := outbox.NewRelay(writer, outbox.Config{}, orgs)
	go relay.Run(ctx)

	eventID := outbox.NewID()
	value := []byte("a serialized quarters.events.v1.OrgEvent carrying eventID")
	ev := outbox.NewEvent(ctx, eventID, "quarters.orgs", "org_1", value)
	update, err := outbox.Append(bson.D{{Key: "$set", Value: bson.D{
		{Key: "name", Value: "Acme Rentals"},
		{Key: "version", Value: int64(4)},
	}}}, ev)
	if err != nil {
		fmt.Println(err)
		return
	}
	res, err := orgs.UpdateOne(ctx, bson.D{{Key: "_id", Value: "org_1"}, {Key: "version", Value: int64(3)}}, update)
	switch {
	case err != nil:
		fmt.Println(err)
	case res.MatchedCount == 0:
		fmt.Println("conflict: the org changed since it was read; reload and retry")
	default:
		relay.Notify()
	}
}
