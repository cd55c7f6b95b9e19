// Package outbox publishes domain events to Kafka exactly when the state
// change that produced them is stored, without multi-document transactions.
//
// # Storage
//
// Pending events ride inside the aggregate's own document:
//
//	{
//	  _id: "org_123", version: 7, name: "…",          // the aggregate
//	  outbox: [ {id, topic, key, value, headers, createdAt}, … ],
//	  outboxPending: 2,                                 // entries in outbox
//	  outboxSeq: 9                                      // events ever added
//	}
//
// A repository writes the state change and its events in ONE single-document
// update guarded by the aggregate's version, so either both are stored or
// neither is. Append adds the events to an update built with operators: it
// $push-es them (with $each) onto the outbox and $inc-rements both counters.
// A repository that inserts a new aggregate, or replaces the whole document,
// embeds Pending in its storage model and calls Pending.Add.
//
//	func (r *OrgRepo) Rename(ctx context.Context, orgID string, version int64, name string) error {
//		eventID := outbox.NewID()
//		value, err := proto.Marshal(orgUpdatedEvent(eventID, orgID, version+1, name))
//		if err != nil {
//			return err
//		}
//		ev := outbox.NewEvent(ctx, eventID, r.topic, orgID, value)
//		update, err := outbox.Append(bson.D{{Key: "$set", Value: bson.D{
//			{Key: "name", Value: name}, {Key: "version", Value: version + 1},
//		}}}, ev)
//		if err != nil {
//			return err
//		}
//		res, err := r.coll.UpdateOne(ctx, bson.D{{Key: "_id", Value: orgID}, {Key: "version", Value: version}}, update)
//		if err != nil {
//			return err
//		}
//		if res.MatchedCount == 0 {
//			return ErrConflict // someone else changed the org first: reload and retry
//		}
//		r.notify(orgID) // relay.Notifier(r.coll): the relay reads this document by _id
//		return nil
//	}
//
// # Relay
//
// A Relay finds documents whose outboxPending is positive (those named by
// NotifyDoc, read by _id, or all of them on a sweep), publishes their
// events in order (keyed by aggregate id, so one aggregate's events stay in
// order on one partition) and then removes exactly the acknowledged events by
// rewriting the outbox array under a compare-and-set on the document's version
// and outboxSeq. If the document changed meanwhile the relay reads it again and
// removes the published events from the fresh copy, so an event added
// concurrently is never lost. Removal never uses $pull with a condition: the
// embedded store ignores it.
//
// Delivery is at least once. If the relay stops after Kafka acknowledged an
// event but before the event was removed, the next pass publishes it again,
// with the same event id in the event-id header (and in the envelope), and
// consumers drop what they have seen. While Kafka is unreachable the events
// wait in MongoDB and go out when it returns.
//
//	writer := extkafka.NewWriter(cfg.KafkaBrokers)
//	defer writer.Close()
//	relay := outbox.NewRelay(writer, outbox.Config{Logger: log, Registerer: reg},
//		db.Collection("orgs"), db.Collection("credential_sets"))
//	repo := NewOrgRepo(db.Collection("orgs"), relay.Notifier(db.Collection("orgs"))) // called after each write
//	group.Go(func() error { return relay.Run(ctx) }) // flushes once more on shutdown
package outbox
