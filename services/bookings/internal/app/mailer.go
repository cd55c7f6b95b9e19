package app

import (
	"context"
	"log/slog"
	"time"

	"quarters.dev/services/bookings/internal/domain"
)

// MailQueue is where confirmation emails wait: in their inquiries'
// documents, so they survive restarts.
type MailQueue interface {
	DueMail(ctx context.Context, now time.Time, limit int) ([]domain.MailJob, error)
	ClaimMail(ctx context.Context, inquiryID string, now time.Time, lease time.Duration) (bool, error)
	MailSent(ctx context.Context, inquiryID string, at time.Time) error
	MailFailed(ctx context.Context, inquiryID string, next time.Time, giveUp bool, reason string) error
}

// Sender delivers one email.
type Sender interface {
	Send(ctx context.Context, c domain.Confirmation) error
}

// Mailer sends queued confirmation emails, apart from the requests that
// queued them: a slow or failing SMTP server delays the email, never the
// inquiry. Delivery is at least once; a failed attempt is retried with
// backoff until MaxAttempts.
type Mailer struct {
	Queue       MailQueue
	Sender      Sender
	Log         *slog.Logger
	Interval    time.Duration
	Timeout     time.Duration
	MaxAttempts int
	// Sent counts outcomes: "sent", "failed" (will retry), "given_up".
	Outcome func(outcome string)
	wake    chan struct{}
}

// NewMailer returns a mailer; Notify wakes it.
func NewMailer(q MailQueue, s Sender, log *slog.Logger, interval, timeout time.Duration, outcome func(string)) *Mailer {
	return &Mailer{Queue: q, Sender: s, Log: log, Interval: interval, Timeout: timeout, MaxAttempts: 12,
		Outcome: outcome, wake: make(chan struct{}, 1)}
}

// Notify asks for a pass soon; it never blocks.
func (m *Mailer) Notify() {
	select {
	case m.wake <- struct{}{}:
	default:
	}
}

// Run sends due emails until ctx ends.
func (m *Mailer) Run(ctx context.Context) error {
	t := time.NewTicker(m.Interval)
	defer t.Stop()
	for {
		m.pass(ctx)
		select {
		case <-ctx.Done():
			return nil
		case <-m.wake:
		case <-t.C:
		}
	}
}

func (m *Mailer) pass(ctx context.Context) {
	for ctx.Err() == nil {
		now := time.Now().UTC()
		jobs, err := m.Queue.DueMail(ctx, now, 50)
		if err != nil {
			m.Log.Warn("read queued confirmation emails", "error", err)
			return
		}
		if len(jobs) == 0 {
			return
		}
		progressed := false
		for _, j := range jobs {
			ok, err := m.Queue.ClaimMail(ctx, j.InquiryID, now, 2*m.Timeout)
			if err != nil {
				m.Log.Warn("claim confirmation email", "inquiry", j.InquiryID, "error", err)
				return
			}
			if !ok {
				continue
			}
			progressed = true
			m.send(ctx, j)
		}
		if !progressed {
			return
		}
	}
}

func (m *Mailer) send(ctx context.Context, j domain.MailJob) {
	sctx, cancel := context.WithTimeout(ctx, m.Timeout)
	err := m.Sender.Send(sctx, j.Email)
	cancel()
	now := time.Now().UTC()
	if err == nil {
		if err := m.Queue.MailSent(context.WithoutCancel(ctx), j.InquiryID, now); err != nil {
			m.Log.Warn("record confirmation email sent", "inquiry", j.InquiryID, "error", err)
		}
		m.outcome("sent")
		return
	}
	attempts := j.Attempts + 1
	giveUp := attempts >= m.MaxAttempts
	backoff := time.Duration(1<<min(attempts, 12)) * time.Second
	m.Log.Warn("send confirmation email", "inquiry", j.InquiryID, "attempt", attempts, "give_up", giveUp, "error", err)
	if err := m.Queue.MailFailed(context.WithoutCancel(ctx), j.InquiryID, now.Add(backoff), giveUp, err.Error()); err != nil {
		m.Log.Warn("record confirmation email failure", "inquiry", j.InquiryID, "error", err)
	}
	if giveUp {
		m.outcome("given_up")
	} else {
		m.outcome("failed")
	}
}

func (m *Mailer) outcome(o string) {
	if m.Outcome != nil {
		m.Outcome(o)
	}
}
