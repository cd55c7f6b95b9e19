package domain

import "time"

// Status is where a delivery record stands. A record is written as pending
// before anything is sent, becomes attempting in one compare-and-set just
// before the request goes out, and ends delivered or failed. Only a pending
// record can be claimed, so a delivery is attempted at most once per record.
type Status string

const (
	Pending    Status = "pending"
	Attempting Status = "attempting"
	Delivered  Status = "delivered"
	Failed     Status = "failed"
)

// Reason says why an attempt failed.
type Reason string

const (
	ReasonTimeout         Reason = "timeout"
	ReasonRefusedAddress  Reason = "refused_address"
	ReasonConnectionError Reason = "connection_error"
	ReasonTLSError        Reason = "tls_error"
	ReasonNon2xx          Reason = "non_2xx"
	ReasonInvalidURL      Reason = "invalid_url"
	ReasonEndpointDeleted Reason = "endpoint_deleted"
	// ReasonInterrupted marks a record found attempting after the process
	// that claimed it stopped: whether the receiver got the request is
	// unknown, and it is not sent again.
	ReasonInterrupted Reason = "interrupted"
)

// Delivery is one record: one attempt (or the promise of one) of sending a
// body to an endpoint. A redelivery is a record of its own with the same
// DeliveryID and Body.
type Delivery struct {
	// RecordID is unique per record; for the first record of a delivery it
	// equals DeliveryID, which makes "one first record per delivery" a
	// unique-index guarantee.
	RecordID   string
	DeliveryID string
	EndpointID string
	OrgID      string
	Event      string
	Body       []byte
	// CreatedAt is the body's createdAt: when the domain event happened.
	CreatedAt time.Time
	// RecordedAt is when this record was written; lists sort by it.
	RecordedAt  time.Time
	Redelivery  bool
	Status      Status
	AttemptedAt *time.Time
	Duration    time.Duration
	StatusCode  int
	Reason      Reason
	Error       string
}

// Outcome is the result of one attempt.
type Outcome struct {
	Delivered  bool
	StatusCode int
	Duration   time.Duration
	Reason     Reason
	Error      string
}
