package forecast

import (
	"fmt"
	"math"
	"slices"
	"time"
)

// The weekend of the weekday/weekend model. By default it is Saturday and Sunday in
// Options.Location (UTC unless the policy names a zone), and a load's week follows the clock of
// the people behind it, not the controller's: a cluster serving Singapore read in UTC has its
// quiet days from Friday 16:00 to Sunday 16:00. On such a load the weekday/weekend model pools
// weekdays with weekend days, and the forecaster loses much of what it has over the baselines:
// synthetic web-1 (tune/), read eight hours off its clock, went from 0.872 of its best baseline to
// 0.988, seven hours the other way to 0.933, fourteen hours off to 1.000.
//
// So the weekend is read from the load (weekMeans, bestPhase, weekendHolds; Walker.phaseAt):
// at each day boundary, the two days from the hour of the week that leaves the least of the
// last one to four weeks' hourly means unexplained when those two days are pooled as one kind
// and the other five as another. It replaces the calendar's only when it does so in every one of
// those weeks, by more than phaseGain (phaseOneWeekGain when there is one), and within
// phaseSlack of each week's own best; only on a load with a daily or weekly cycle
// (Walker.weekendAt); and only when the day before found it too (within two hours). Once in
// force it stays while it holds. When it changes, the fallback (fallbackAt) judges the mix only
// on forecasts made since: those made before were another mix's. With it, web-1 read 8 or 7
// hours off scores 0.872 again, 14 hours off 0.885, 36 hours off 0.905. On tune, the zoned
// family (forecast/synth: web or batch 3–12 hours off UTC) went 1.134, 0.868, 0.941 → 1.027,
// 0.833, 0.842; NYC taxi 0.798 → 0.791 (its weekend read from Friday 23:00: its nights out); no
// other series moved. zoned-1 stays above 1.0: in the
// first days of its first scored week, with one week of history, nothing is read yet, and the
// forecast falls back to same time yesterday. Reading from one week as from two (at phaseGain)
// took ec2_disk_write_bytes_c0d644 +0.199, crane's input2 +0.066, drift-2 and drift-3 +0.025 (a
// week's chance weekend); not reading from one week at all left zoned-1 at 1.049; one week at a
// gain of 0.5 or 0.7 moved only zoned-1.
//
// Tried on tune and dropped: a gain of 0.3 (web-1 seven hours off was not found: its calendar
// misplaces night hours, which leave little unexplained, 0.69 of it); each week's own best
// within an hour of the chosen one (a batch load's nights tie: zoned-1's was found on three days
// of 28); no day-before agreement (drift-2 +0.018: one day's chance weekend), or none asked on
// the first day a week is known, when no day before can agree (zoned-1 1.117, with the same
// weekend read a day earlier); the fallback judging the mix afresh only once a day of its new
// forecasts is known (zoned-1 1.041); not judging it afresh at all (zoned-1 1.134: the mix's
// forecasts of the first weeks, made with the wrong weekend, kept it on the baselines for five
// weeks); the weekly baselines exempt from the fallback's weekday/weekend evidence rule (zoned-1
// unchanged; ec2_disk_write_bytes_1ef3de −0.056 and ec2_network_in_5abac7 −0.016, but NYC taxi,
// batch-3, short-2 and zoned-2 +0.006 to +0.009).
const (
	// phaseMinWeeks is how many whole weeks, with a value at every hour, the weekend needs.
	phaseMinWeeks = 1
	// phaseWeeks is how many whole weeks of history the weekend is read from.
	phaseWeeks = 4
	// phaseGain is how much less of the week's variation (the residual sum of squares of the
	// hourly means around their kind's daily profile) another weekend must leave unexplained
	// than the calendar's to replace it, in each of two or more weeks.
	phaseGain = 0.1
	// phaseOneWeekGain is the same from a single week, where no second week can confirm it: the
	// first week after a week of history, when the first weekend is due to be forecast.
	phaseOneWeekGain = 0.7
	// phaseSlack is how much more than the best weekend of each week the chosen one may leave
	// unexplained in it: nights that look alike make neighbouring starts near ties.
	phaseSlack = 0.1
	// phaseEvery is how often the weekend is looked for again.
	phaseEvery = Day
)

const hoursInWeek = 168

// hourOfWeek is the hour of the week of t in its location, counted from Saturday 00:00.
func hourOfWeek(t time.Time) int {
	return (int(t.Weekday())+1)%7*24 + t.Hour()
}

// weekMeans returns the hourly means of each of the last phaseWeeks whole weeks up to index d
// (hour 0 at Saturday 00:00 in loc) that has a value at every hour of the week; nil when fewer
// than phaseMinWeeks such weeks are known, or on a grid coarser than an hour. Daylight-saving
// changes within the window are not followed: the hours count on from the window's first point.
func weekMeans(s Series, loc *time.Location, d int) [][hoursInWeek]float64 {
	week := s.Steps(Week)
	k := min(phaseWeeks, (d+1)/week)
	if s.Step > time.Hour || time.Hour%s.Step != 0 || k < phaseMinWeeks {
		return nil
	}
	lo := d + 1 - k*week
	t0 := s.TimeAt(lo).In(loc)
	off := time.Duration(hourOfWeek(t0))*time.Hour + time.Duration(t0.Minute()*60+t0.Second())*time.Second
	sum := make([][hoursInWeek]float64, k)
	n := make([][hoursInWeek]int, k)
	for i := lo; i <= d; i++ {
		b, wk := int(off/time.Hour), (i-lo)/week
		if off += s.Step; off >= Week {
			off -= Week
		}
		if v := s.Values[i]; !math.IsNaN(v) {
			sum[wk][b] += v
			n[wk][b]++
		}
	}
	var means [][hoursInWeek]float64
	for wk := range k {
		var m [hoursInWeek]float64
		full := true
		for b := range m {
			if n[wk][b] == 0 {
				full = false
				break
			}
			m[b] = sum[wk][b] / float64(n[wk][b])
		}
		if full {
			means = append(means, m)
		}
	}
	if len(means) < phaseMinWeeks {
		return nil
	}
	return means
}

// bestPhase returns the start of the weekend that leaves the least of the weeks' pooled hourly
// means unexplained (kindsRSS), 0 when it does not hold in every week (weekendHolds).
func bestPhase(means [][hoursInWeek]float64) int {
	var pooled [hoursInWeek]float64
	for i := range means {
		for b := range pooled {
			pooled[b] += means[i][b]
		}
	}
	rss := kindsRSS(&pooled)
	phase := 0
	for c := range hoursInWeek {
		if rss[c] < rss[phase] {
			phase = c
		}
	}
	if phase == 0 || !weekendHolds(means, phase) {
		return 0
	}
	return phase
}

// weekendHolds tells whether the weekend from hour c explains every week better than the
// calendar's, leaving less than 1−phaseGain of what that leaves, and nearly as well as the
// week's own best, leaving at most 1+phaseSlack of what that leaves. One week can be fooled by
// a level that moves within it (a migration, a wandering load); a weekend comes back.
func weekendHolds(means [][hoursInWeek]float64, c int) bool {
	gain := phaseGain
	if len(means) == 1 {
		gain = phaseOneWeekGain
	}
	for i := range means {
		rss := kindsRSS(&means[i])
		if rss[c] >= (1-gain)*rss[0] || rss[c] > (1+phaseSlack)*slices.Min(rss[:]) {
			return false
		}
	}
	return true
}

// kindsRSS returns, for each start c of a weekend, what a week's hourly means leave unexplained
// when the two days from hour c of the week are pooled as one kind and the other five as
// another: the sum of squares of each hour's mean around its kind's mean at that hour of the day.
// Per hour of the day, the seven values' sum of squares less 2·(weekend mean)² and 5·(weekday
// mean)²; the seven values of an hour of the day are the same whatever c.
func kindsRSS(mean *[hoursInWeek]float64) [hoursInWeek]float64 {
	var squares float64
	var byHour [24]float64
	for b, v := range mean {
		squares += v * v
		byHour[b%24] += v
	}
	var rss [hoursInWeek]float64
	for c := range rss {
		explained := 0.0
		for h := range 24 {
			we := mean[(c+h)%hoursInWeek] + mean[(c+24+h)%hoursInWeek]
			wd := byHour[(c+h)%24] - we
			explained += we*we/2 + wd*wd/5
		}
		rss[c] = squares - explained
	}
	return rss
}

// weekendFlags tells for each i in [0, n) whether point i falls in the weekend from hour phase
// of the week (inWeekend) in loc's local time. Within each period of loc's zone
// (time.Time.ZoneBounds) the offset is fixed, so the local hour of the week is the Unix time
// plus the offset, counted in hours, without converting every point (converting them was 3–4 %
// of a one-minute series' backtest 15 minutes ahead).
func weekendFlags(s Series, n int, loc *time.Location, phase int) []bool {
	out := make([]bool, n)
	for i := 0; i < n; {
		start := s.TimeAt(i).In(loc)
		_, end := start.ZoneBounds()
		_, off := start.Zone()
		for ; i < n; i++ {
			t := s.TimeAt(i)
			if !end.IsZero() && !t.Before(end) {
				break
			}
			out[i] = inWeekend(localHourOfWeek(t.Unix()+int64(off)), phase)
		}
	}
	return out
}

// localHourOfWeek is hourOfWeek of the local time whose seconds since 1970-01-01 00:00 (a
// Thursday) are sec.
func localHourOfWeek(sec int64) int {
	hours := sec / 3600
	if sec%3600 < 0 {
		hours-- // floored, before 1970
	}
	// Hour 0 of the week is Saturday 00:00; 1970-01-01 00:00 is hour 5·24 of its week.
	return int(((hours+5*24)%hoursInWeek + hoursInWeek) % hoursInWeek)
}

// inWeekend tells whether hour of the week hour (from Saturday 00:00) falls in the two days from
// hour phase.
func inWeekend(hour, phase int) bool {
	return (hour-phase+hoursInWeek)%hoursInWeek < 48
}

// phaseLabel names a weekend that is not the calendar's: the hour it starts, as "Fri 16:00".
func phaseLabel(phase int) string {
	day := time.Weekday((phase/24 + 6) % 7) // hour 0 is Saturday
	return fmt.Sprintf("%s %02d:00", day.String()[:3], phase%24)
}
