-- The default rule set: the five crime subcategories (a match sets
-- is_crime_related and crime_subcategory) and common news topics. Keywords
-- are whole words or whole phrases (the engine never matches inside a word),
-- normalized by the engine (case, accents, punctuation), so "break-in" also
-- matches "break in".
--
-- Scoring (the original design's): score = 0.5*min(1, log1p(hits)/2.5) + 0.5*hits/keywords,
-- hits being the distinct keywords found. With about 25 keywords a rule
-- scores ~0.16 on one keyword, ~0.26 on two, ~0.34 on three and ~0.40 on
-- four: min_confidence 0.25 asks for two distinct keywords, 0.3 for three.
-- Crime rules come first (priority 80-100), so the highest-priority crime
-- match becomes the crime_subcategory.
--
-- Rows carry seed = '005_default_rules' so the down migration removes exactly
-- them; a rule of the same name that already exists is left alone.
INSERT INTO classification_rules (name, topic, keywords, min_confidence, priority, enabled, seed) VALUES
('Violent crime', 'violent_crime', ARRAY[
    'murder', 'murdered', 'homicide', 'manslaughter', 'attempted murder',
    'shooting', 'shot dead', 'fatally shot', 'gunman', 'gunfire', 'shots fired',
    'stabbing', 'stabbed', 'assault', 'aggravated assault', 'sexual assault',
    'assaulted', 'kidnapping', 'abducted', 'hostage', 'robbery', 'armed robbery',
    'carjacking', 'domestic violence', 'slain', 'violent attack', 'killed'
], 0.25, 100, TRUE, '005_default_rules'),
('Organized crime', 'organized_crime', ARRAY[
    'organized crime', 'organised crime', 'gang', 'gangs', 'gang related',
    'gang member', 'street gang', 'biker gang', 'hells angels', 'cartel',
    'mafia', 'mob boss', 'crime family', 'criminal organization',
    'criminal network', 'money laundering', 'racketeering', 'extortion',
    'human trafficking', 'smuggling ring', 'gun smuggling', 'illegal firearms',
    'targeted shooting', 'loan sharking', 'underworld'
], 0.25, 95, TRUE, '005_default_rules'),
('Drug crime', 'drug_crime', ARRAY[
    'drug trafficking', 'drug traffickers', 'trafficking', 'drug dealer',
    'drug dealing', 'drug bust', 'drug charges', 'drug seizure', 'seized drugs',
    'narcotics', 'fentanyl', 'cocaine', 'crack cocaine', 'heroin',
    'methamphetamine', 'crystal meth', 'opioids', 'controlled substance',
    'possession for the purpose of trafficking', 'street value', 'drug lab',
    'grow op', 'illegal cannabis', 'drug smuggling', 'carfentanil'
], 0.25, 90, TRUE, '005_default_rules'),
('Property crime', 'property_crime', ARRAY[
    'burglary', 'burglaries', 'burglar', 'break and enter', 'break-in',
    'broke into', 'theft', 'thefts', 'stolen', 'stole', 'shoplifting',
    'shoplifter', 'vandalism', 'vandalized', 'vandalised', 'arson', 'arsonist',
    'auto theft', 'car theft', 'stolen vehicle', 'catalytic converter',
    'mischief', 'trespassing', 'looting', 'pickpocket', 'stolen property',
    'property damage', 'graffiti'
], 0.25, 85, TRUE, '005_default_rules'),
('Criminal justice', 'criminal_justice', ARRAY[
    'arrested', 'arrest', 'charged', 'charges laid', 'court', 'courtroom',
    'judge', 'jury', 'trial', 'sentenced', 'sentencing', 'convicted',
    'conviction', 'pleaded guilty', 'found guilty', 'not guilty', 'acquitted',
    'prosecutor', 'crown attorney', 'crown prosecutor', 'defence lawyer',
    'defense attorney', 'bail hearing', 'bail', 'parole', 'prison', 'jail',
    'inmate', 'warrant', 'preliminary hearing'
], 0.3, 80, TRUE, '005_default_rules'),
('Politics', 'politics', ARRAY[
    'election', 'elections', 'campaign', 'candidate', 'candidates', 'ballot',
    'voters', 'polls', 'parliament', 'legislature', 'senate', 'congress',
    'prime minister', 'premier', 'president', 'minister', 'cabinet',
    'opposition', 'legislation', 'political party', 'member of parliament',
    'mpp', 'question period', 'referendum', 'liberals', 'conservatives',
    'ndp', 'democrats', 'republicans', 'house of commons'
], 0.3, 50, TRUE, '005_default_rules'),
('Business', 'business', ARRAY[
    'economy', 'economic', 'inflation', 'interest rates', 'interest rate',
    'bank of canada', 'federal reserve', 'stock market', 'stocks', 'shares',
    'investors', 'earnings', 'revenue', 'profit', 'quarterly results', 'merger',
    'acquisition', 'layoffs', 'unemployment', 'jobs report', 'gdp', 'recession',
    'ceo', 'retail sales', 'housing market', 'mortgage rates', 'tsx',
    'dow jones', 'nasdaq', 'tariffs'
], 0.3, 45, TRUE, '005_default_rules'),
('Health', 'health', ARRAY[
    'hospital', 'hospitals', 'emergency room', 'patients', 'doctors', 'nurses',
    'public health', 'health care', 'healthcare', 'vaccine', 'vaccination',
    'covid 19', 'influenza', 'flu season', 'outbreak', 'virus', 'disease',
    'cancer', 'mental health', 'medical officer of health', 'health unit',
    'pharmacy', 'prescription', 'surgery', 'wait times', 'clinic', 'diagnosis',
    'symptoms', 'opioid crisis'
], 0.3, 45, TRUE, '005_default_rules'),
('Technology', 'technology', ARRAY[
    'technology', 'tech', 'artificial intelligence', 'ai', 'software', 'app',
    'smartphone', 'internet', 'cybersecurity', 'cyberattack', 'data breach',
    'hackers', 'ransomware', 'social media', 'semiconductor', 'chips',
    'microsoft', 'google', 'apple', 'cloud computing', 'algorithm', 'robotics',
    'electric vehicles', 'broadband', '5g', 'computer', 'startup', 'chatbot'
], 0.3, 40, TRUE, '005_default_rules'),
('Traffic', 'traffic', ARRAY[
    'traffic', 'collision', 'crash', 'car crash', 'highway', 'motorist',
    'motorists', 'driver', 'pedestrian', 'cyclist', 'road closure',
    'road closed', 'lane closure', 'detour', 'intersection', 'rollover',
    'multi vehicle', 'fatal collision', 'impaired driving', 'speeding',
    'traffic delays', 'congestion', 'construction zone', 'tow truck',
    'head on collision', 'transit', 'vehicles'
], 0.25, 40, TRUE, '005_default_rules'),
('Weather', 'weather', ARRAY[
    'weather', 'forecast', 'environment canada', 'weather warning',
    'special weather statement', 'snowfall', 'snowstorm', 'blizzard',
    'freezing rain', 'thunderstorm', 'tornado', 'hurricane', 'heat warning',
    'heat wave', 'extreme cold', 'wind chill', 'temperatures', 'rainfall',
    'flooding', 'flood warning', 'hail', 'fog', 'humidex', 'frost', 'drought',
    'wildfire smoke', 'meteorologist', 'centimetres of snow', 'gusts'
], 0.25, 40, TRUE, '005_default_rules'),
('Local news', 'local_news', ARRAY[
    'city council', 'councillor', 'council meeting', 'mayor', 'municipal',
    'township', 'residents', 'neighbourhood', 'neighborhood', 'community centre',
    'community center', 'downtown', 'town hall', 'city hall', 'school board',
    'local business', 'bylaw', 'zoning', 'public library', 'fire department',
    'firefighters', 'property taxes', 'ward', 'county', 'recreation centre',
    'community'
], 0.3, 35, TRUE, '005_default_rules'),
('Sports', 'sports', ARRAY[
    'hockey', 'nhl', 'ohl', 'football', 'nfl', 'cfl', 'soccer', 'basketball',
    'nba', 'baseball', 'mlb', 'playoffs', 'tournament', 'championship',
    'stanley cup', 'grey cup', 'world cup', 'olympics', 'goaltender', 'goalie',
    'quarterback', 'head coach', 'overtime', 'hat trick', 'power play',
    'touchdown', 'home run', 'athletes', 'season opener', 'scored'
], 0.25, 30, TRUE, '005_default_rules'),
('Entertainment', 'entertainment', ARRAY[
    'movie', 'film', 'box office', 'actor', 'actress', 'director', 'celebrity',
    'concert', 'album', 'singer', 'band', 'music festival', 'theatre',
    'theater', 'broadway', 'netflix', 'streaming', 'tv series', 'premiere',
    'oscars', 'grammys', 'award show', 'red carpet', 'hollywood', 'comedian',
    'art gallery', 'exhibition', 'bestseller'
], 0.3, 25, TRUE, '005_default_rules')
ON CONFLICT (name) DO NOTHING;
