package verify

import (
	"fmt"
	"time"

	"github.com/polygraph-dev/polygraph/model"
)

// certs raises certificate findings from TLS evidence.
func (j *judge) certs() {
	count := map[string]int{}
	for o := range j.observations() {
		if o.TLS != nil && o.TLS.SHA256 != "" {
			count[o.TLS.SHA256]++
		}
	}
	common, best := "", 0
	for fp, n := range count {
		if n > best || (n == best && fp < common) {
			common, best = fp, n
		}
	}
	for o := range j.observations() {
		c, id := o.TLS, o.Target.ID
		if c == nil {
			continue
		}
		if c.VerifyError != "" {
			j.add(model.Finding{Kind: model.KindCertInvalid, Severity: model.SeverityError, Instance: id,
				Message: fmt.Sprintf("%s presents a certificate that fails verification: %s", id, c.VerifyError)})
		}
		if left := c.NotAfter.Sub(j.in.Now); j.in.CertExpiryWarning > 0 && left < j.in.CertExpiryWarning {
			msg := fmt.Sprintf("%s's certificate expires %s (in %s)", id, c.NotAfter.Format(time.RFC3339), left.Round(time.Hour))
			if left <= 0 {
				msg = fmt.Sprintf("%s's certificate expired %s", id, c.NotAfter.Format(time.RFC3339))
			}
			j.add(model.Finding{Kind: model.KindCertExpiring, Severity: model.SeverityWarning, Instance: id, Message: msg,
				Evidence: map[string]string{"not_after": c.NotAfter.Format(time.RFC3339)}})
		}
		if len(count) > 1 && c.SHA256 != common {
			j.add(model.Finding{Kind: model.KindCertMismatch, Severity: model.SeverityWarning, Instance: id,
				Message:  fmt.Sprintf("%s presents a different certificate from the one %d other instance(s) present", id, best),
				Evidence: map[string]string{"want": common, "got": c.SHA256}})
		}
		if !c.MatchesHost && c.VerifyError == "" {
			j.add(model.Finding{Kind: model.KindCertInvalid, Severity: model.SeverityError, Instance: id,
				Message: fmt.Sprintf("%s presents a certificate (%s) that does not cover the probed host", id, c.Subject)})
		}
	}
}
