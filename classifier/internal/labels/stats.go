package labels

import (
	"cmp"
	"context"
	"slices"
	"time"
)

// TopicStats measure the classifier's decisions at labelling time against
// the labels for one topic.
type TopicStats struct {
	Topic string `json:"topic"`
	// Labelled documents carry this label; Predicted were decided this
	// topic; Correct both.
	Labelled  int     `json:"labelled"`
	Predicted int     `json:"predicted"`
	Correct   int     `json:"correct"`
	Precision float64 `json:"precision"`
	Recall    float64 `json:"recall"`
}

// Week is the labels of one week (starting Monday) and how many the
// classifier had right.
type Week struct {
	Week     string `json:"week"`
	Labelled int    `json:"labelled"`
	Correct  int    `json:"correct"`
}

// Stats are the decisions measured against every label.
type Stats struct {
	Labelled int          `json:"labelled"`
	Topics   []TopicStats `json:"topics"`
	// Confusion[label][predicted] counts labels; predicted is "none" for a
	// document the classifier gave no topic.
	Confusion map[string]map[string]int `json:"confusion"`
	Weeks     []Week                    `json:"weeks"`
}

// NoTopic names the predicted topic of a document that had none.
const NoTopic = "none"

// Stats computes the figures in one grouped read.
func (s *Store) Stats(ctx context.Context) (Stats, error) {
	out := Stats{Topics: []TopicStats{}, Confusion: map[string]map[string]int{}, Weeks: []Week{}}
	rows, err := s.db.QueryContext(ctx, `SELECT label, predicted_topic, date_trunc('week', labelled_at), count(*)
		FROM topic_labels GROUP BY 1, 2, 3`)
	if err != nil {
		return out, dbError("label stats", err)
	}
	defer rows.Close()
	topics := map[string]*TopicStats{}
	topic := func(t string) *TopicStats {
		if topics[t] == nil {
			topics[t] = &TopicStats{Topic: t}
		}
		return topics[t]
	}
	weeks := map[string]*Week{}
	for rows.Next() {
		var label, predicted string
		var week time.Time
		var n int
		if err := rows.Scan(&label, &predicted, &week, &n); err != nil {
			return out, dbError("label stats", err)
		}
		if predicted == "" {
			predicted = NoTopic
		}
		out.Labelled += n
		topic(label).Labelled += n
		if predicted != NoTopic {
			topic(predicted).Predicted += n
		}
		if out.Confusion[label] == nil {
			out.Confusion[label] = map[string]int{}
		}
		out.Confusion[label][predicted] += n
		key := week.UTC().Format(time.DateOnly)
		if weeks[key] == nil {
			weeks[key] = &Week{Week: key}
		}
		weeks[key].Labelled += n
		if label == predicted {
			topic(label).Correct += n
			weeks[key].Correct += n
		}
	}
	if err := rows.Err(); err != nil {
		return out, dbError("label stats", err)
	}
	for _, t := range topics {
		if t.Predicted > 0 {
			t.Precision = float64(t.Correct) / float64(t.Predicted)
		}
		if t.Labelled > 0 {
			t.Recall = float64(t.Correct) / float64(t.Labelled)
		}
		out.Topics = append(out.Topics, *t)
	}
	slices.SortFunc(out.Topics, func(a, b TopicStats) int { return cmp.Compare(a.Topic, b.Topic) })
	for _, w := range weeks {
		out.Weeks = append(out.Weeks, *w)
	}
	slices.SortFunc(out.Weeks, func(a, b Week) int { return cmp.Compare(a.Week, b.Week) })
	return out, nil
}
