package domain

import (
	"fmt"
	"strings"
)

// Confirmation is the guest's confirmation email of an inquiry, in one
// language. Subject and Body are plain UTF-8 text; encoding for the wire is
// the mailer's job.
type Confirmation struct {
	OrgID     string
	InquiryID string
	To        string
	ToName    string
	Locale    string
	Subject   string
	Body      string
}

// MailJob is a confirmation email waiting to be sent.
type MailJob struct {
	InquiryID string
	OrgID     string
	Attempts  int
	Email     Confirmation
}

// Locales the confirmation email is written in; any other locale gets
// English.
var confirmationTexts = map[string]struct {
	subject, greeting, intro, property, dates, noDates, reference, outro string
}{
	"en": {
		subject:   "We received your inquiry for %s",
		greeting:  "Hello %s,",
		intro:     "thank you for your inquiry. We have received it and will get back to you soon.",
		property:  "Property: %s",
		dates:     "Dates: %s to %s",
		noDates:   "Dates: not given",
		reference: "Inquiry reference: %s",
		outro:     "Kind regards",
	},
	"de": {
		subject:   "Wir haben Ihre Anfrage für %s erhalten",
		greeting:  "Guten Tag %s,",
		intro:     "vielen Dank für Ihre Anfrage. Wir haben sie erhalten und melden uns in Kürze bei Ihnen.",
		property:  "Unterkunft: %s",
		dates:     "Zeitraum: %s bis %s",
		noDates:   "Zeitraum: nicht angegeben",
		reference: "Anfragenummer: %s",
		outro:     "Mit freundlichen Grüßen",
	},
	"nl": {
		subject:   "We hebben uw aanvraag voor %s ontvangen",
		greeting:  "Beste %s,",
		intro:     "hartelijk dank voor uw aanvraag. We hebben deze ontvangen en nemen spoedig contact met u op.",
		property:  "Woning: %s",
		dates:     "Periode: %s tot %s",
		noDates:   "Periode: niet opgegeven",
		reference: "Referentie van de aanvraag: %s",
		outro:     "Met vriendelijke groet",
	},
	"pt": {
		subject:   "Recebemos o seu pedido para %s",
		greeting:  "Olá %s,",
		intro:     "obrigado pelo seu pedido. Recebemo-lo e entraremos em contacto consigo em breve.",
		property:  "Alojamento: %s",
		dates:     "Datas: %s a %s",
		noDates:   "Datas: não indicadas",
		reference: "Referência do pedido: %s",
		outro:     "Com os melhores cumprimentos",
	},
}

// ConfirmationLocale is the language used for a guest's locale: its primary
// language subtag when it is en, de, nl or pt, else en.
func ConfirmationLocale(locale *string) string {
	if locale == nil {
		return "en"
	}
	lang := strings.ToLower(strings.TrimSpace(*locale))
	if i := strings.IndexAny(lang, "-_"); i >= 0 {
		lang = lang[:i]
	}
	if _, ok := confirmationTexts[lang]; ok {
		return lang
	}
	return "en"
}

// NewConfirmation writes the confirmation email of q; propertyName names the
// property (its nickname, or its id when the name is unknown).
func NewConfirmation(q Inquiry, propertyName, org string) Confirmation {
	loc := ConfirmationLocale(q.Locale)
	t := confirmationTexts[loc]
	name := q.LastName
	if q.FirstName != nil && *q.FirstName != "" {
		name = *q.FirstName + " " + q.LastName
	}
	var b strings.Builder
	fmt.Fprintf(&b, t.greeting+"\n\n", name)
	b.WriteString(t.intro + "\n\n")
	fmt.Fprintf(&b, t.property+"\n", propertyName)
	if q.CheckIn != nil || q.CheckOut != nil {
		fmt.Fprintf(&b, t.dates+"\n", dateOrDash(q.CheckIn), dateOrDash(q.CheckOut))
	} else {
		b.WriteString(t.noDates + "\n")
	}
	fmt.Fprintf(&b, t.reference+"\n\n", q.ID)
	b.WriteString(t.outro + "\n")
	if org != "" {
		b.WriteString(org + "\n")
	}
	return Confirmation{
		OrgID:     q.OrgID,
		InquiryID: q.ID,
		To:        q.Email,
		ToName:    name,
		Locale:    loc,
		Subject:   fmt.Sprintf(t.subject, propertyName),
		Body:      b.String(),
	}
}

func dateOrDash(d *Date) string {
	if d == nil {
		return "-"
	}
	return d.String()
}
